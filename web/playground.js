// The playground: a page that makes JSON-RPC something to see and try. It
// uses switchboard.js like any page would, and shows every frame on the
// WebSocket through the client's trace option.
import { Client, RPCError, TimeoutError, ConnectionError, matches } from "./switchboard.js";

const $ = (id) => document.getElementById(id);

// el builds an element: el("span", {class: "x"}, "text", child). Text is
// always set as text: nothing from the hub is parsed as HTML.
function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue;
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (k === "class") e.className = v;
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) if (c !== undefined && c !== null && c !== false) e.append(c instanceof Node ? c : String(c));
  return e;
}

// ---- JSON display ----

// parseExact parses JSON keeping numbers as written where the browser can
// (JSON.rawJSON), so that a frame shows 123456789012345678901234567890
// rather than 1.2345678901234568e+29.
function parseExact(text) {
  if (typeof JSON.rawJSON !== "function") return JSON.parse(text);
  return JSON.parse(text, (_k, v, ctx) => (typeof v === "number" && ctx?.source !== undefined && String(v) !== ctx.source ? JSON.rawJSON(ctx.source) : v));
}

const isRaw = (v) => typeof JSON.isRawJSON === "function" && JSON.isRawJSON(v);

// inline writes v as JSON on one line, with a space after colons and commas.
function inline(v) {
  if (v === null || typeof v !== "object" || isRaw(v)) return JSON.stringify(v) ?? "undefined";
  if (Array.isArray(v)) return "[" + v.map(inline).join(", ") + "]";
  return "{" + Object.entries(v).map(([k, x]) => JSON.stringify(k) + ": " + inline(x)).join(", ") + "}";
}

// pretty writes v as indented JSON, keeping what fits on a short line on one.
function pretty(v, indent = "") {
  const one = inline(v);
  if (one.length + indent.length <= 60 || v === null || typeof v !== "object" || isRaw(v)) return one;
  const next = indent + "  ";
  const lines = Array.isArray(v) ? v.map((x) => next + pretty(x, next)) : Object.entries(v).map(([k, x]) => next + JSON.stringify(k) + ": " + pretty(x, next));
  const [open, close] = Array.isArray(v) ? ["[", "]"] : ["{", "}"];
  return `${open}\n${lines.join(",\n")}\n${indent}${close}`;
}

const tokenRE = /("(?:\\.|[^"\\])*")(\s*:)?|\b(true|false|null)\b|(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)/g;

// jsonView renders a value (or unparsable text) as highlighted JSON.
function jsonView(value, { raw = false } = {}) {
  const pre = el("pre", { class: "json" });
  let text;
  if (raw) {
    text = value;
  } else {
    try {
      text = pretty(value);
    } catch {
      text = String(value);
    }
  }
  let last = 0;
  for (const m of text.matchAll(tokenRE)) {
    if (m.index > last) pre.append(text.slice(last, m.index));
    const cls = m[1] ? (m[2] ? "j-key" : "j-str") : m[3] ? "j-lit" : "j-num";
    pre.append(el("span", { class: cls }, m[1] ?? m[0]));
    if (m[2]) pre.append(m[2]);
    last = m.index + m[0].length;
  }
  if (last < text.length) pre.append(text.slice(last));
  return pre;
}

// prettyText pretty-prints a frame, or returns it as it is when it is not JSON.
function prettyText(text) {
  try {
    return { value: parseExact(text), ok: true };
  } catch (err) {
    return { value: text, ok: false, error: err };
  }
}

const explanations = {
  [-32700]: "Parse error: the message was not valid JSON. The WebSocket stays open.",
  [-32600]: "Invalid Request: valid JSON, but not a JSON-RPC 2.0 request. Check \"jsonrpc\": \"2.0\", a string method, params as an array or object, and the id's type.",
  [-32601]: "Method not found: the hub serves no method of that name. The method list shows what it has.",
  [-32602]: "Invalid params: the params do not fit the method. Its parameter list is shown under the method name.",
  [-32603]: "Internal error in the method's handler.",
  [-32000]: "The method failed; the message is its error.",
  [-32001]: "Unauthorized: the hub's policy refused this.",
  [-32002]: "Cancelled: the caller sent rpc.cancel (the Cancel button does).",
  [-32003]: "Timed out on the hub's side.",
  [-32004]: "Overloaded: too many calls in flight on this connection.",
  [-32005]: "The hub is shutting down and did not run this call.",
  [-32006]: "The peer serving this method disconnected; it may or may not have run.",
};

function errorView(err) {
  if (err instanceof RPCError) {
    const body = { code: err.code, message: err.message };
    if (err.data !== undefined) body.data = err.data;
    return [jsonView(body), explanations[err.code] && el("p", { class: "explain" }, explanations[err.code])];
  }
  if (err instanceof TimeoutError) return [el("p", { class: "explain" }, err.message)];
  if (err instanceof ConnectionError) return [el("p", { class: "explain" }, `${err.name}: ${err.message}`)];
  return [el("p", { class: "explain" }, String(err?.message ?? err))];
}

const clock = (d = new Date()) => d.toLocaleTimeString(undefined, { hour12: false }) + "." + String(d.getMilliseconds()).padStart(3, "0");
const ms = (t) => (t < 1000 ? `${Math.round(t)} ms` : `${(t / 1000).toFixed(t < 10000 ? 2 : 1)} s`);

// ---- the frame log ----

const frames = {
  list: $("frames"),
  asked: { send: new Map(), receive: new Map() }, // id key -> when a request went that way
  shown: 0,
  hiddenPings: new Set(), // ids of rpc.ping calls, whose answers hide with them
  max: 400,

  add(direction, text) {
    const now = performance.now();
    const { value, ok } = prettyText(text);
    const info = classify(value, ok);
    const isPing = info.ping || (info.ids.length > 0 && info.ids.every((k) => this.hiddenPings.has(k)) && direction === "receive");
    if (info.requests) for (const [k, method] of info.calls) this.asked[direction].set(k, { now, method });
    if (info.ping && direction === "send") for (const k of info.ids) this.hiddenPings.add(k);
    // A response's latency: since the request it answers went the other way.
    let latency;
    if (info.responses) {
      const asked = this.asked[direction === "send" ? "receive" : "send"];
      const reqs = info.ids.map((k) => asked.get(k)).filter((r) => r !== undefined);
      if (reqs.length > 0) {
        latency = now - Math.min(...reqs.map((r) => r.now));
        if (!Array.isArray(value)) info.summary += ` ← ${reqs[0].method}`;
      }
      for (const k of info.ids) asked.delete(k), this.hiddenPings.delete(k);
    }
    const li = el(
      "li",
      { class: `frame ${direction} k-${info.kind}`, "data-ping": isPing ? "1" : undefined, hidden: isPing && !$("show-pings").checked },
      el(
        "div",
        { class: "frame-head" },
        el("span", { class: "dir", title: direction === "send" ? "sent by this page" : "received from the hub" }, direction === "send" ? "↑" : "↓"),
        el("span", { class: "kind" }, info.label),
        el("span", { class: "summary" }, info.summary),
        el("span", { class: "time" }, clock()),
        latency !== undefined && el("span", { class: "lat", title: direction === "send" ? "time this page took to answer" : "time the hub took to answer" }, "+" + ms(latency)),
      ),
      ok ? jsonView(value) : el("pre", { class: "json j-bad" }, text),
    );
    const atBottom = this.list.scrollHeight - this.list.scrollTop - this.list.clientHeight < 40;
    this.list.querySelector(".empty")?.remove();
    this.list.append(li);
    while (this.list.children.length > this.max) this.list.firstElementChild.remove();
    this.shown++;
    $("frame-count").textContent = String(this.shown);
    if (atBottom) this.list.scrollTop = this.list.scrollHeight;
    rawReplies.observe(direction, value, ok, info);
  },
};

const idKey = (id) => (typeof id === "string" ? "s" + id : "n" + String(id));

// classify names a frame: its kind, a one-line summary, and the ids in it.
function classify(value, ok) {
  if (!ok) return { kind: "invalid", label: "not JSON", summary: "", ids: [] };
  if (Array.isArray(value)) {
    const parts = value.map((v) => classify(v, true));
    const ids = parts.flatMap((p) => p.ids);
    const calls = parts.flatMap((p) => p.calls ?? []);
    const counts = {};
    for (const p of parts) counts[p.label] = (counts[p.label] ?? 0) + 1;
    return {
      kind: parts.some((p) => p.kind === "error") ? "error" : "batch",
      label: `batch of ${value.length}`,
      summary: Object.entries(counts).map(([k, n]) => (n > 1 ? `${n} × ${k}` : k)).join(", "),
      ids,
      calls,
      requests: parts.some((p) => p.requests),
      responses: parts.some((p) => p.responses),
    };
  }
  if (value === null || typeof value !== "object") return { kind: "invalid", label: "not a request", summary: "", ids: [] };
  const id = "id" in value ? ` #${JSON.stringify(value.id)}` : "";
  if (typeof value.method === "string") {
    const p = value.params;
    if (value.method === "rpc.event") return { kind: "event", label: "event", summary: p?.topic ?? "", ids: [] };
    if (value.method === "rpc.progress") return { kind: "note", label: "progress", summary: `for #${JSON.stringify(p?.id)}`, ids: [] };
    if (value.method === "rpc.cancel") return { kind: "note", label: "cancel", summary: `of #${JSON.stringify(p?.id)}`, ids: [] };
    if (!("id" in value)) return { kind: "notification", label: "notification", summary: value.method, ids: [] };
    const k = idKey(value.id);
    return { kind: "call", label: "call", summary: value.method + id, ids: [k], calls: [[k, value.method]], requests: true, ping: value.method === "rpc.ping" };
  }
  if ("error" in value) return { kind: "error", label: "error", summary: `${value.error?.code ?? ""} ${value.error?.message ?? ""}${id}`, ids: [idKey(value.id)], responses: true };
  if ("result" in value) return { kind: "result", label: "result", summary: id.trim(), ids: [idKey(value.id)], responses: true };
  return { kind: "invalid", label: "not a request", summary: "", ids: [] };
}

$("show-pings").addEventListener("change", (e) => {
  for (const li of frames.list.querySelectorAll("[data-ping]")) li.hidden = !e.target.checked;
});
$("clear-frames").addEventListener("click", () => {
  frames.list.replaceChildren(el("li", { class: "empty" }, "Cleared."));
  frames.shown = 0;
  $("frame-count").textContent = "";
});

// ---- the connection ----

const params = new URLSearchParams(location.search);
const hubURL = (() => {
  if (params.get("hub")) return params.get("hub");
  const u = new URL("rpc", location.href);
  u.protocol = u.protocol === "https:" ? "wss:" : "ws:";
  u.search = "";
  return u.href;
})();
let token = params.get("token") ?? undefined;
let client;
let discovered = false;

const served = new Map(); // method -> {mode, reply, fn}
const subs = new Map(); // pattern -> {count, sub, chip}

function connect() {
  client?.close(1000, "reconnecting");
  discovered = false;
  const c = new Client(hubURL, { token, trace, callTimeout: 0, pingInterval: 20_000 });
  client = c;
  c.addEventListener("state", (e) => c === client && showState(e));
  c.addEventListener("error", (e) => {
    e.preventDefault();
    // Answers without id come from raw messages; the raw box shows them.
    if (e.context !== "a response without id") note(`${e.context}: ${e.error?.message ?? e.error}`);
  });
  for (const [method, s] of served) s.off = c.register(method, serveHandler(method));
  for (const [pattern, s] of subs) {
    s.sub = undefined;
    subscribeOn(c, pattern, s);
  }
}

function showState(e) {
  const conn = $("conn");
  conn.dataset.state = e.state;
  $("conn-url").textContent = hubURL;
  const text = {
    connecting: e.attempt ? `connecting (attempt ${e.attempt + 1})…` : "connecting…",
    open: "connected",
    disconnected: `disconnected${e.code ? ` (${e.code})` : ""}`,
    closed: "closed",
  }[e.state];
  $("conn-text").textContent = text;
  const banner = $("banner");
  if (e.state === "open") {
    banner.hidden = true;
    if (!discovered) discover();
    return;
  }
  if (e.state === "disconnected") {
    const why = e.reason || (e.code === 1006 ? "the connection failed" : "closed");
    $("banner-text").textContent = `Not connected to ${hubURL}: ${why}. Retrying in ${ms(e.delay)}; calls wait until then.`;
    const needsToken = /HTTP 401/.test(e.reason);
    $("token-form").hidden = !needsToken;
    banner.hidden = false;
    if (needsToken && document.activeElement?.tagName !== "INPUT") $("token").focus();
  }
}

$("retry").addEventListener("click", connect);
$("reconnect").addEventListener("click", connect);
$("token-form").addEventListener("submit", (e) => {
  e.preventDefault();
  token = $("token").value.trim() || undefined;
  connect();
});

function note(text) {
  addCallEntry({ method: "client", note: text });
}

// ---- methods from rpc.discover ----

const system = [
  { name: "rpc.ping", summary: "Checks that the hub answers; the result is {}.", params: [] },
  { name: "rpc.discover", summary: "The hub's methods, as an OpenRPC document (this list comes from it).", params: [] },
  { name: "rpc.publish", summary: "Publishes data on a topic; the result says how many peers got it.", example: { topic: "chat.room1", data: "hello" } },
  { name: "rpc.subscribe", summary: "Subscribes this connection to a topic. Prefer the Topics panel: it also shows the events.", example: { topic: "chat.*" } },
  { name: "rpc.unsubscribe", summary: "Unsubscribes this connection from a topic.", example: { topic: "chat.*" } },
];
let methods = new Map();

async function discover() {
  try {
    const doc = await client.call("rpc.discover", undefined, { timeout: 10_000 });
    discovered = true;
    methods = new Map([...doc.methods, ...system].map((m) => [m.name, m]));
    $("methods").replaceChildren(...[...methods.keys()].map((n) => el("option", { value: n })));
    showMethod(false);
  } catch (err) {
    note(`rpc.discover failed: ${err.message}`);
  }
}

// typeOf renders a JSON Schema as a short type.
function typeOf(s = {}) {
  if (Array.isArray(s.enum)) return s.enum.map((v) => JSON.stringify(v)).join(" | ");
  switch (s.type) {
    case undefined:
      return "any";
    case "array":
      return typeOf(s.items) + "[]";
    case "object": {
      const props = Object.entries(s.properties ?? {});
      if (props.length === 0) return s.additionalProperties ? `{[key]: ${typeOf(s.additionalProperties)}}` : "object";
      const req = new Set(s.required ?? []);
      return `{${props.map(([k, v]) => `${k}${req.has(k) ? "" : "?"}: ${typeOf(v)}`).join(", ")}}`;
    }
  }
  return Array.isArray(s.type) ? s.type.join(" | ") : s.type;
}

// sample makes a placeholder value for a schema.
function sample(s = {}) {
  if (s.examples?.length) return s.examples[0];
  if (s.default !== undefined) return s.default;
  if (Array.isArray(s.enum)) return s.enum[0];
  switch (s.type) {
    case "number":
    case "integer":
      return 0;
    case "string":
      return "";
    case "boolean":
      return false;
    case "array":
      return [];
    case "object":
      return Object.fromEntries(Object.entries(s.properties ?? {}).map(([k, v]) => [k, sample(v)]));
  }
  return null;
}

// template makes params for a method: by name where it may, with a
// placeholder for each required parameter.
function template(m) {
  if (m.example !== undefined) return m.example;
  const ps = m.params ?? [];
  if (ps.length === 0) return undefined;
  if (m.paramStructure === "by-position") {
    const p = ps[0];
    if (ps.length === 1 && p.name === "params") return [sample(p.schema?.items ?? p.schema)];
    return ps.map((p) => sample(p.schema));
  }
  if (m.paramStructure === "by-name" && ps.length === 1 && ps[0].name === "params") return {};
  if (ps.length === 1 && ps[0].name === "params" && !ps[0].required) return undefined;
  return Object.fromEntries(ps.filter((p) => p.required || ps.length <= 3).map((p) => [p.name, sample(p.schema)]));
}

// showMethod describes the method picked, and fills in a params template
// when fill is set and the method is another than the one shown before.
let shown;
function showMethod(fill = true) {
  const m = methods.get($("method").value.trim());
  const info = $("method-info");
  if (!m) {
    info.replaceChildren();
    shown = undefined;
    return;
  }
  if (m === shown) return;
  shown = m;
  const sig = `${m.name}(${(m.params ?? []).map((p) => `${p.name}${p.required ? "" : "?"}: ${typeOf(p.schema)}`).join(", ")})${m.result ? " → " + typeOf(m.result.schema) : ""}`;
  const text = m.description ?? m.summary;
  const rows = (m.params ?? []).filter((p) => p.description);
  info.replaceChildren(
    el(
      "div",
      {},
      el("div", { class: "sig" }, sig),
      text && el("p", {}, text),
      rows.length > 0 && el("table", {}, rows.map((p) => el("tr", {}, el("td", {}, p.name), el("td", {}, p.description)))),
    ),
  );
  if (fill) {
    const t = template(m);
    $("params").value = t === undefined ? "" : JSON.stringify(t);
  }
}
$("method").addEventListener("change", () => showMethod(true));
$("method").addEventListener("input", () => {
  if (methods.has($("method").value.trim())) showMethod(true);
});

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
  const badge = el("span", { class: "badge run" }, noteText ? "note" : kind === "call" ? "running" : "sending");
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
  if (noteText) {
    badge.className = "badge warn";
    body.append(el("p", { class: "explain" }, noteText));
    return;
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
      progressEl.textContent = `progress: ${JSON.stringify(data)}`;
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

// capture is the call entry that learns the id of the request the client
// sends next, from the trace: the client writes a call synchronously while
// it is connected (a call that waits for the connection shows no id).
let capture;

function trace(direction, text) {
  if (capture && direction === "send") {
    try {
      const m = JSON.parse(text);
      capture.id = Array.isArray(m) ? m.filter((x) => "id" in x).map((x) => x.id).join(", ") : m.id;
    } catch {
      // not a request of the client's
    }
    capture = undefined;
  }
  frames.add(direction, text);
}

function readParams() {
  const text = $("params").value.trim();
  const err = $("params-error");
  err.hidden = true;
  if (text === "") return { ok: true, value: undefined };
  try {
    const value = JSON.parse(text);
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

async function call(method, params) {
  const controller = new AbortController();
  const entry = addCallEntry({ method, params, controller });
  capture = entry;
  const p = client.call(method, params, { signal: controller.signal, onProgress: (d) => entry.progress(d) });
  capture = undefined;
  try {
    entry.done(true, await p);
  } catch (err) {
    entry.done(false, err, controller.signal.aborted ? "cancelled" : undefined);
  }
}

$("pane-method").addEventListener("submit", (e) => {
  e.preventDefault();
  const method = $("method").value.trim();
  const p = readParams();
  if (method && p.ok) call(method, p.value);
});

$("notify").addEventListener("click", async () => {
  const method = $("method").value.trim();
  const p = readParams();
  if (!method || !p.ok) return;
  const entry = addCallEntry({ method, params: p.value, kind: "notification" });
  try {
    await client.notify(method, p.value);
    entry.done(true, undefined, "sent");
    entry.tick();
  } catch (err) {
    entry.done(false, err);
  }
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
        `${r.notification ? "notify " : ""}${r.method}${r.params !== undefined ? " " + JSON.stringify(r.params) : ""}`,
        el("button", { type: "button", class: "ghost small", "aria-label": "remove", onclick: () => (batch.splice(i, 1), showBatch()) }, "×"),
      ),
    ),
  );
}

$("add-batch").addEventListener("click", () => {
  const method = $("method").value.trim();
  const p = readParams();
  if (!method || !p.ok) return;
  batch.push({ method, params: p.value });
  showBatch();
});
$("clear-batch").addEventListener("click", () => {
  batch.length = 0;
  showBatch();
});
$("send-batch").addEventListener("click", async () => {
  const requests = batch.splice(0);
  showBatch();
  const controller = new AbortController();
  const entry = addCallEntry({ method: requests.map((r) => r.method).join(", "), kind: "batch", controller });
  capture = entry;
  const p = client.batch(requests, { signal: controller.signal });
  capture = undefined;
  try {
    const out = await p;
    entry.done(
      true,
      out.map((r, i) => ({ method: requests[i].method, ...(r.status === "fulfilled" ? { result: r.value ?? null } : { error: { code: r.reason.code, message: r.reason.message } }) })),
      `${out.filter((r) => r.status === "fulfilled").length}/${out.length} ok`,
    );
  } catch (err) {
    entry.done(false, err, controller.signal.aborted ? "cancelled" : undefined);
  }
});

// ---- raw messages ----

const examples = [
  ["positional params", '{"jsonrpc": "2.0", "method": "subtract", "params": [42, 23], "id": 1}'],
  ["named params", '{"jsonrpc": "2.0", "method": "subtract", "params": {"subtrahend": 23, "minuend": 42}, "id": 3}'],
  ["notification", '{"jsonrpc": "2.0", "method": "update", "params": [1,2,3,4,5]}'],
  ["method not found", '{"jsonrpc": "2.0", "method": "foobar", "id": "1"}'],
  ["invalid JSON", '{"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz]'],
  ["invalid Request", '{"jsonrpc": "2.0", "method": 1, "params": "bar"}'],
  ["batch, invalid JSON", '[\n  {"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},\n  {"jsonrpc": "2.0", "method"\n]'],
  ["empty array", "[]"],
  ["invalid batch", "[1]"],
  ["invalid batch of 3", "[1,2,3]"],
  [
    "batch",
    '[\n  {"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},\n  {"jsonrpc": "2.0", "method": "notify_hello", "params": [7]},\n  {"jsonrpc": "2.0", "method": "subtract", "params": [42,23], "id": "2"},\n  {"foo": "boo"},\n  {"jsonrpc": "2.0", "method": "foo.get", "params": {"name": "myself"}, "id": "5"},\n  {"jsonrpc": "2.0", "method": "get_data", "id": "9"}\n]',
  ],
  ["batch of notifications", '[\n  {"jsonrpc": "2.0", "method": "notify_sum", "params": [1,2,4]},\n  {"jsonrpc": "2.0", "method": "notify_hello", "params": [7]}\n]'],
];
$("examples").replaceChildren(
  ...examples.map(([name, text]) =>
    el(
      "button",
      {
        type: "button",
        class: "chip",
        title: text,
        onclick: () => {
          $("raw").value = text;
          $("raw").focus();
        },
      },
      name,
    ),
  ),
);

// rawReplies shows, under the raw box, the answers to what it sent: the
// responses whose ids it used, and errors without id.
const rawReplies = {
  ids: new Set(),
  waiting: false,
  sent(text) {
    const box = $("raw-reply");
    box.hidden = false;
    const { value, ok } = prettyText(text);
    const info = classify(value, ok);
    this.ids = new Set(info.ids);
    this.waiting = true;
    const expectNothing = ok && !info.requests && info.kind !== "invalid" && !(Array.isArray(value) && value.length === 0) && info.ids.length === 0;
    box.replaceChildren(el("h3", {}, "Reply"), el("p", { class: "hint" }, expectNothing ? "None expected: notifications are never answered." : "Waiting…"));
    if (expectNothing) this.waiting = false;
  },
  observe(direction, value, ok, info) {
    if (!this.waiting || direction !== "receive" || !info.responses) return;
    const nullId = (v) => v && typeof v === "object" && v.id === null;
    const mine = info.ids.some((k) => this.ids.has(k)) || (Array.isArray(value) ? value.some(nullId) : nullId(value));
    if (!mine) return;
    this.waiting = false;
    const box = $("raw-reply");
    const errs = (Array.isArray(value) ? value : [value]).map((v) => v?.error?.code).filter((c) => explanations[c]);
    box.replaceChildren(el("h3", {}, "Reply"), jsonView(value), ...[...new Set(errs)].map((c) => el("p", { class: "explain" }, `${c}: ${explanations[c]}`)));
  },
};

$("pane-raw").addEventListener("submit", (e) => {
  e.preventDefault();
  const text = $("raw").value;
  try {
    client.sendRaw(text);
    rawReplies.sent(text);
  } catch (err) {
    note(`Not sent: ${err.message}`);
  }
});

// ---- tabs and keys ----

for (const tab of document.querySelectorAll('[role="tab"]')) {
  tab.addEventListener("click", () => {
    for (const t of document.querySelectorAll('[role="tab"]')) {
      const on = t === tab;
      t.setAttribute("aria-selected", String(on));
      $(t.getAttribute("aria-controls")).hidden = !on;
    }
  });
}

// Enter sends from every text box; Shift+Enter starts a new line.
document.addEventListener("keydown", (e) => {
  if (e.key !== "Enter" || e.shiftKey || e.isComposing || e.target.tagName !== "TEXTAREA") return;
  const form = e.target.closest("form");
  if (!form) return;
  e.preventDefault();
  form.requestSubmit();
});

// ---- topics ----

function onEvent(ev) {
  if (ev.missed) {
    // After a reconnection the hub could not replay everything.
    note(`Events of ${ev.topic} were missed while disconnected: the hub no longer held them.`);
    return;
  }
  const list = $("events");
  list.querySelector(".empty")?.remove();
  const by = [];
  for (const [pattern, s] of subs) {
    if (matches(pattern, ev.topic)) {
      s.count++;
      s.countEl.textContent = String(s.count);
      by.push(pattern);
    }
  }
  list.prepend(
    el(
      "li",
      { class: "entry" },
      el("div", { class: "entry-head" }, el("span", { class: "badge warn" }, "event"), el("span", { class: "name" }, ev.topic), el("span", { class: "meta" }, `${clock()} · via ${by.join(", ")}`)),
      jsonView(ev.data),
    ),
  );
  while (list.children.length > 50) list.lastElementChild.remove();
}

async function subscribeOn(c, pattern, s) {
  try {
    s.sub = await c.subscribe(pattern, onEvent);
    s.chip.classList.remove("pending");
  } catch (err) {
    if (c !== client) return;
    subs.delete(pattern);
    s.chip.remove();
    note(`Subscribe to ${pattern} failed: ${err.message}`);
  }
}

$("subscribe-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const pattern = $("pattern").value.trim();
  if (!pattern) return;
  if (subs.has(pattern)) {
    $("publish-result").textContent = `Already subscribed to ${pattern}.`;
    return;
  }
  const countEl = el("span", { class: "count", title: "events received" }, "0");
  const s = { count: 0, countEl };
  s.chip = el(
    "li",
    { class: "chip pending" },
    el("code", {}, pattern),
    countEl,
    el(
      "button",
      {
        type: "button",
        "aria-label": `unsubscribe from ${pattern}`,
        title: "Unsubscribe",
        onclick: async () => {
          subs.delete(pattern);
          s.chip.remove();
          await s.sub?.unsubscribe().catch((err) => note(`Unsubscribe failed: ${err.message}`));
        },
      },
      "×",
    ),
  );
  subs.set(pattern, s);
  $("subs").append(s.chip);
  subscribeOn(client, pattern, s);
});

$("publish-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const out = $("publish-result");
  let data;
  try {
    const text = $("data").value.trim();
    data = text === "" ? null : JSON.parse(text);
  } catch (err) {
    out.textContent = `Data is not valid JSON: ${err.message}. Write strings in quotes: "hello".`;
    return;
  }
  const topic = $("topic").value.trim();
  try {
    const n = await client.publish(topic, data);
    out.textContent = `Published on ${topic}: reached ${n} peer${n === 1 ? "" : "s"}.`;
  } catch (err) {
    out.textContent = `Publish failed: ${err instanceof RPCError ? `${err.code} ${err.message}` : err.message}`;
  }
});

// ---- methods this page serves ----

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
      el("div", { class: "entry-head" }, el("span", { class: "name" }, method), el("span", { class: "meta" }, `${id === undefined ? "" : `#${JSON.stringify(id)} · `}${clock()}`), badge),
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
      answer.focus();
      signal.addEventListener("abort", () => {
        badge.className = "badge warn";
        badge.textContent = "cancelled by the caller";
        form.remove();
      });
    });
  };
}

function register(method, spec) {
  spec.off = client.register(method, serveHandler(method));
  served.get(method)?.off();
  served.set(method, spec);
  showServed();
}

function showServed() {
  $("served").replaceChildren(
    ...[...served].map(([method, s]) =>
      el(
        "li",
        { class: "chip" },
        el("code", {}, method),
        el("span", { class: "count" }, s.fn ? "automatic" : s.mode === "ask" ? "asks you" : "replies " + JSON.stringify(s.reply)),
        el(
          "button",
          {
            type: "button",
            "aria-label": `stop serving ${method}`,
            title: "Unregister",
            onclick: () => {
              served.get(method)?.off();
              served.delete(method);
              showServed();
            },
          },
          "×",
        ),
      ),
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
      note(`The reply is not valid JSON: ${err.message}`);
      return;
    }
  }
  try {
    register(method, { mode, reply });
    $("serve-name").value = "";
  } catch (err) {
    note(err.message);
  }
});

for (const b of document.querySelectorAll("[data-try]")) {
  b.addEventListener("click", () => {
    document.querySelector("#tab-method").click();
    $("method").value = "callback";
    showMethod(false);
    $("params").value = b.dataset.try;
    call("callback", JSON.parse(b.dataset.try));
  });
}

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

$("conn-url").textContent = hubURL;
connect();
register("whoami", { fn: () => ({ page: location.href, userAgent: navigator.userAgent, time: new Date().toISOString() }) });
register("confirm", { mode: "ask" });
