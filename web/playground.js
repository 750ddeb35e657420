// The playground: a page that makes JSON-RPC something to see and try. It
// uses switchboard.js like any page would, and shows every frame on the
// WebSocket through the client's trace option. This file holds the
// connection, the Request form, calls, batches and the methods the page
// serves; the other parts are in the playground-*.js modules beside it.
import { RPCError } from "./switchboard.js";
import { $, app, el, jsonView, errorView, inline, parseExact, parseParams, ms } from "./playground-view.js";
import { frames } from "./playground-frames.js";
import { discover, fill } from "./playground-methods.js";
import { resubscribe, reopened } from "./playground-topics.js";
import { served, serveOn, register } from "./playground-serve.js";
import "./playground-raw.js";
import "./playground-library.js";
import "./playground-mcp.js";
import { connect } from "./playground-connection.js";

// ---- the connection ----

app.trace = trace;
app.onClient.push((c) => {
  for (const [method, s] of served) serveOn(c, method, s);
  resubscribe(c);
});
app.onOpen.push((c, again) => {
  discover(); // again on each connection: what the hub serves may have changed
  if (again) reopened(c);
});

// note tells something in the Calls list, and returns the element that
// holds the text, to change it later.
function note(text) {
  return addCallEntry({ method: "client", note: text });
}
app.note = note;
app.fill = fill;

// ---- calls ----

const running = new Set();
let ticker = 0;

function tick() {
  for (const r of running) r.tick();
  if (running.size === 0) {
    clearInterval(ticker);
    ticker = 0;
  }
}

function addCallEntry({ method, params, kind = "call", note: noteText, controller }) {
  const list = $("calls");
  list.querySelector(".empty")?.remove();
  const badge = el("span", { class: "badge run" }, noteText !== undefined ? "note" : kind === "call" ? "running" : "sending");
  const meta = el("span", { class: "meta" });
  const cancel = controller && el("button", { type: "button", class: "small danger", onclick: () => controller.abort(new Error("cancelled from the page")) }, "Cancel");
  const body = el("div");
  const li = el(
    "li",
    { class: "entry" },
    el("div", { class: "entry-head" }, el("span", { class: "name" }, method), kind === "batch" ? el("span", { class: "badge" }, "batch") : null, badge, meta, el("span", { class: "end" }, cancel)),
    params !== undefined && kind !== "batch" ? [el("div", { class: "label" }, "params"), jsonView(params)] : null,
    body,
  );
  list.prepend(li);
  while (list.children.length > 50) list.lastElementChild.remove();
  if (noteText !== undefined) {
    badge.className = "badge warn";
    const p = el("p", { class: "explain" }, noteText);
    body.append(p);
    return p;
  }
  const start = performance.now();
  let progressEl;
  const entry = {
    id: undefined,
    tick: () => (meta.textContent = `${entry.id !== undefined ? `#${entry.id} · ` : ""}${ms(performance.now() - start)}`),
    progress(data) {
      if (!progressEl) {
        progressEl = el("div", { class: "progress-text" });
        body.append(el("div", { class: "progress" }, el("span")), progressEl);
      }
      progressEl.textContent = `progress: ${inline(data)}`;
    },
    done(ok, value, label) {
      running.delete(entry);
      entry.tick();
      cancel?.remove();
      body.querySelector(".progress")?.remove();
      badge.className = `badge ${ok ? "ok" : "err"}`;
      badge.textContent = label ?? (ok ? "result" : value instanceof RPCError ? `error ${value.code}` : "failed");
      if (ok) {
        if (value !== undefined) body.append(el("div", { class: "label" }, "result"), Object.assign(jsonView(value), { className: "json result" }));
      } else {
        body.append(el("div", { class: "label" }, "error"), ...errorView(value).filter(Boolean));
      }
    },
  };
  running.add(entry);
  entry.tick();
  ticker ||= setInterval(tick, 100);
  return entry;
}

// unsent holds the call entries whose request the client has not written
// yet, oldest first. Each learns its id from the trace of the first
// message that carries its method(s): at once while the client is
// connected, or once it is again (after the client's own re-subscribing).
const unsent = [];

function trace(direction, text) {
  if (direction === "send" && unsent.length > 0) learnId(text);
  frames.add(direction, text);
}

function learnId(text) {
  let m;
  try {
    m = parseExact(text);
  } catch {
    return; // a raw message
  }
  const msgs = Array.isArray(m) ? m : [m];
  const calls = msgs.filter((x) => x && typeof x.method === "string" && "id" in x);
  if (calls.length === 0) return;
  const key = msgs.map((x) => x?.method).join(",");
  const i = unsent.findIndex((u) => u.key === key);
  if (i < 0) return;
  const [u] = unsent.splice(i, 1);
  u.entry.id = calls.map((x) => inline(x.id)).join(", ");
  u.entry.tick();
}

// sending registers entry to learn its id, until the call ends.
function sending(entry, methods) {
  const u = { entry, key: methods.join(",") };
  unsent.push(u);
  return () => unsent.includes(u) && unsent.splice(unsent.indexOf(u), 1);
}

function readParams() {
  const text = $("params").value.trim();
  const err = $("params-error");
  err.hidden = true;
  if (text === "") return { ok: true, value: undefined };
  try {
    const value = parseParams(text);
    if (value === null || typeof value !== "object") {
      throw new Error("params must be an array [..] or an object {..}; for a single value write [value]");
    }
    return { ok: true, value };
  } catch (e) {
    err.textContent = `Params: ${e.message}. (The Raw JSON tab sends anything, malformed too.)`;
    err.hidden = false;
    return { ok: false };
  }
}

// call makes a call shown in the Calls list, and resolves to its result
// (undefined when it failed: the list shows why).
async function call(method, params) {
  const controller = new AbortController();
  const entry = addCallEntry({ method, params, controller });
  const forget = sending(entry, [method]);
  try {
    const result = await app.client.call(method, params, { signal: controller.signal, onProgress: (d) => entry.progress(d) });
    entry.done(true, result);
    return result;
  } catch (err) {
    entry.done(false, err, controller.signal.aborted ? "cancelled" : undefined);
  } finally {
    forget();
  }
}
app.call = call;

$("pane-method").addEventListener("submit", (e) => {
  e.preventDefault();
  const method = $("method").value.trim();
  const p = readParams();
  if (!method || !p.ok) return;
  for (const fn of app.onSend) fn({ method, params: $("params").value.trim() });
  call(method, p.value);
});

$("notify").addEventListener("click", async () => {
  const method = $("method").value.trim();
  const p = readParams();
  if (!method || !p.ok) return;
  for (const fn of app.onSend) fn({ method, params: $("params").value.trim(), notification: true });
  const entry = addCallEntry({ method, params: p.value, kind: "notification" });
  try {
    await app.client.notify(method, p.value);
    entry.done(true, undefined, "sent");
    entry.tick();
  } catch (err) {
    entry.done(false, err);
  }
});

$("clear-calls").addEventListener("click", () => {
  // The calls still running go on; only their entries go.
  $("calls").replaceChildren(el("li", { class: "empty" }, "Cleared. Calls you make appear here."));
});

// ---- batches ----

const batch = [];

function showBatch() {
  $("batch").hidden = batch.length === 0;
  $("batch-count").textContent = `(${batch.length})`;
  $("batch-items").replaceChildren(
    ...batch.map((r, i) =>
      el(
        "li",
        {},
        `${r.notification ? "notify " : ""}${r.method}${r.params !== undefined ? " " + inline(r.params) : ""}`,
        el("button", { type: "button", class: "ghost small", "aria-label": "remove", onclick: () => (batch.splice(i, 1), showBatch()) }, "×"),
      ),
    ),
  );
}

function queue(notification) {
  const method = $("method").value.trim();
  const p = readParams();
  if (!method || !p.ok) return;
  batch.push({ method, params: p.value, notification });
  showBatch();
}
$("add-batch").addEventListener("click", () => queue(false));
$("add-batch-notify").addEventListener("click", () => queue(true));
$("clear-batch").addEventListener("click", () => {
  batch.length = 0;
  showBatch();
});
$("send-batch").addEventListener("click", async () => {
  const requests = batch.splice(0);
  showBatch();
  const controller = new AbortController();
  const entry = addCallEntry({ method: requests.map((r) => (r.notification ? `notify ${r.method}` : r.method)).join(", "), kind: "batch", controller });
  const forget = sending(entry, requests.map((r) => r.method));
  try {
    const out = await app.client.batch(requests, { signal: controller.signal });
    const calls = out.filter((_r, i) => !requests[i].notification);
    entry.done(
      true,
      out.map((r, i) =>
        requests[i].notification
          ? { method: requests[i].method, notification: "sent; never answered" }
          : { method: requests[i].method, ...(r.status === "fulfilled" ? { result: r.value ?? null } : { error: { code: r.reason.code, message: r.reason.message } }) },
      ),
      calls.length === 0 ? `${requests.length} sent, none answered` : `${calls.filter((r) => r.status === "fulfilled").length}/${calls.length} ok`,
    );
  } catch (err) {
    entry.done(false, err, controller.signal.aborted ? "cancelled" : undefined);
  } finally {
    forget();
  }
});


// ---- tabs and keys ----

// The tabs follow the ARIA tabs pattern: one tab stop, the arrow keys,
// Home and End move between them, and select as they go.
const tabs = [...document.querySelectorAll('[role="tab"]')];
function selectTab(tab) {
  for (const t of tabs) {
    const on = t === tab;
    t.setAttribute("aria-selected", String(on));
    t.tabIndex = on ? 0 : -1;
    $(t.getAttribute("aria-controls")).hidden = !on;
  }
}
for (const tab of tabs) {
  tab.addEventListener("click", () => selectTab(tab));
  tab.addEventListener("keydown", (e) => {
    const i = tabs.indexOf(tab);
    const to = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: tabs.length - 1 }[e.key];
    if (to === undefined) return;
    e.preventDefault();
    const next = tabs[(to + tabs.length) % tabs.length];
    selectTab(next);
    next.focus();
  });
}
selectTab(tabs.find((t) => t.getAttribute("aria-selected") === "true"));

// Enter sends from every text box; Shift+Enter starts a new line.
document.addEventListener("keydown", (e) => {
  if (e.key !== "Enter" || e.shiftKey || e.isComposing || e.target.tagName !== "TEXTAREA") return;
  const form = e.target.closest("form");
  if (!form) return;
  e.preventDefault();
  form.requestSubmit();
});

// The first screen names what is below it: a link to each card, from
// their headings, so that a card added later is named too.
$("sections").replaceChildren(
  el("span", { class: "hint" }, "On this page:"),
  ...[...document.querySelectorAll("main .card h2")].map((h) => el("a", { href: `#${h.id}` }, h.firstChild.textContent.trim())),
);

// ---- theme ----

const themes = ["auto", "light", "dark"];
const themeIcon = { auto: "◐", light: "☀", dark: "☾" };
function applyTheme(t) {
  if (t === "auto") delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = t;
  $("theme").textContent = themeIcon[t];
  $("theme").title = `Theme: ${t} (click to change)`;
}
let theme = localStorage.getItem("switchboard-theme") ?? "auto";
applyTheme(theme);
$("theme").addEventListener("click", () => {
  theme = themes[(themes.indexOf(theme) + 1) % themes.length];
  localStorage.setItem("switchboard-theme", theme);
  applyTheme(theme);
});

// ---- start ----

connect();
register("whoami", { fn: () => ({ page: location.href, userAgent: navigator.userAgent, time: new Date().toISOString() }) });
register("confirm", { mode: "ask" });