// The methods this page serves: the hub calls them (the demo's callback),
// a peer addresses this page with rpc.call, or, provided, any peer calls
// them by name. Each call is listed; those that ask wait for an answer.
import { RPCError } from "./switchboard.js";
import { $, app, el, jsonView, inline, clock } from "./playground-view.js";

export const served = new Map(); // method -> {mode, reply, fn, provided, ready, off, withdraw, chip}

// asked is set when the user pressed a button that makes the hub call
// this page: the call that comes is theirs to answer at once.
let asked = false;

// isTyping tells whether the keyboard is in a text field.
function isTyping() {
  const a = document.activeElement;
  return !!a && (a.tagName === "TEXTAREA" || a.tagName === "SELECT" || (a.tagName === "INPUT" && a.type !== "checkbox"));
}

function serveHandler(method) {
  return (params, { signal, id, progress }) => {
    const s = served.get(method);
    const list = $("incoming");
    list.querySelector(".empty")?.remove();
    const badge = el("span", { class: "badge run" }, id === undefined ? "notification" : s.mode === "ask" ? "waiting for you" : "answered");
    const body = el("div");
    const li = el(
      "li",
      { class: "entry" },
      el("div", { class: "entry-head" }, el("span", { class: "name" }, method), el("span", { class: "meta" }, `${id === undefined ? "" : `#${inline(id)} · `}${clock()}`), badge),
      params !== undefined ? jsonView(params) : null,
      body,
    );
    list.prepend(li);
    while (list.children.length > 50) list.lastElementChild.remove();
    const finish = (ok, value, label) => {
      badge.className = `badge ${ok ? "ok" : "err"}`;
      badge.textContent = label;
      body.replaceChildren(value !== undefined ? jsonView(value) : "");
    };
    if (s.fn) {
      const result = s.fn(params);
      if (id !== undefined) finish(true, result, "answered");
      return result;
    }
    if (s.mode === "reply" || id === undefined) {
      if (id !== undefined) finish(true, s.reply, "answered");
      return s.reply;
    }
    return new Promise((resolve, reject) => {
      const answer = el("textarea", { rows: "2", class: "code", "aria-label": "result (JSON)", spellcheck: "false" });
      answer.value = method === "confirm" ? "true" : '"ok"';
      const err = el("p", { class: "field-error", hidden: true });
      const reply = () => {
        try {
          const v = JSON.parse(answer.value);
          finish(true, v, "you answered");
          resolve(v);
        } catch (e) {
          err.textContent = `Not valid JSON: ${e.message}`;
          err.hidden = false;
        }
      };
      const refuse = () => {
        const e = new RPCError(4000, "refused from the playground", { method });
        finish(false, { code: e.code, message: e.message, data: e.data }, "you refused");
        reject(e);
      };
      const form = el(
        "form",
        { class: "answer", onsubmit: (ev) => (ev.preventDefault(), reply()) },
        answer,
        err,
        el("div", { class: "row" }, el("button", { type: "submit", class: "primary small" }, "Reply"), el("button", { type: "button", class: "small", onclick: refuse }, "Refuse with an error"), el("button", { type: "button", class: "ghost small", onclick: () => progress({ note: "working on it" }) }, "Send progress")),
      );
      body.append(form);
      // The answer box takes the keyboard only when the user just asked
      // for this call (the Try buttons) or was typing nowhere: a call from
      // another peer must not take what the user is typing elsewhere.
      if (asked || !isTyping()) answer.focus();
      asked = false;
      signal.addEventListener("abort", () => {
        // rpc.cancel from the caller, or this page's own connection lost.
        const cancelled = signal.reason instanceof RPCError && signal.reason.code === -32002;
        badge.className = "badge warn";
        badge.textContent = cancelled ? "cancelled by the caller" : "lost with this page's connection";
        if (!cancelled) body.prepend(el("p", { class: "explain" }, "The connection this call came on ended: the answer can no longer reach the caller."));
        form.remove();
      });
    });
  };
}

// serveOn serves a method on client c: registered, for the hub's own
// calls (callback) and rpc.call addressed to this page, or also provided
// to every peer of the hub (rpc.provide).
export function serveOn(c, method, s) {
  s.off = c.register(method, serveHandler(method));
  if (!s.provided) return;
  s.ready = false;
  const p = c.provide(method, serveHandler(method));
  s.withdraw = () => p.then((prov) => prov.withdraw()).catch(() => {});
  p.then(
    () => {
      s.ready = true;
      s.chip?.classList.remove("pending");
    },
    (err) => {
      if (c !== app.client) return;
      app.note(`Providing ${method} failed: ${err instanceof RPCError ? `${err.code} ${err.message}` : err.message}`);
      s.provided = false; // still served to the hub's own calls
      showServed();
    },
  );
}

function stopServing(method) {
  const s = served.get(method);
  s?.off();
  s?.withdraw?.();
  served.delete(method);
}

export function register(method, spec) {
  stopServing(method);
  serveOn(app.client, method, spec);
  served.set(method, spec);
  showServed();
}

function showServed() {
  $("served").replaceChildren(
    ...[...served].map(([method, s]) =>
      (s.chip = el(
        "li",
        { class: `chip${s.provided && !s.ready ? " pending" : ""}`, "data-method": method },
        el("code", {}, method),
        s.provided && el("span", { class: "badge ok", title: "every peer of the hub may call it (rpc.provide)" }, "provided"),
        el("span", { class: "count" }, s.fn ? "automatic" : s.mode === "ask" ? "asks you" : "replies " + inline(s.reply)),
        el(
          "button",
          {
            type: "button",
            "aria-label": `stop serving ${method}`,
            title: "Unregister",
            onclick: () => {
              stopServing(method);
              showServed();
            },
          },
          "×",
        ),
      )),
    ),
  );
}

$("serve-mode").addEventListener("change", () => {
  $("serve-reply-label").hidden = $("serve-mode").value !== "reply";
});
$("register-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const method = $("serve-name").value.trim();
  const mode = $("serve-mode").value;
  let reply;
  if (mode === "reply") {
    try {
      reply = JSON.parse($("serve-reply").value);
    } catch (err) {
      app.note(`The reply is not valid JSON: ${err.message}`);
      return;
    }
  }
  try {
    register(method, { mode, reply, provided: $("serve-provide").checked });
    $("serve-name").value = "";
  } catch (err) {
    app.note(err.message);
  }
});

for (const b of document.querySelectorAll("[data-try]")) {
  b.addEventListener("click", () => {
    asked = true;
    app.fill("callback", JSON.parse(b.dataset.try));
    app.call("callback", JSON.parse(b.dataset.try));
  });
}

