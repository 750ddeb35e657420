// The playground's building blocks: elements, JSON shown as written
// (big numbers and all, highlighted), what each error code means, times.
import { RPCError, TimeoutError, ConnectionError } from "./switchboard.js";

export const $ = (id) => document.getElementById(id);

// app is what the parts of the page share: the current client (a new one
// after Reconnect), and the page's own actions, set by playground.js.
export const app = {
  client: undefined,
  note: (_text) => {},
  call: (_method, _params) => {},
  // fill puts a method and params into the Request form.
  fill: (_method, _params) => {},
  trace: (_direction, _text) => {},
  onClient: [], // fn(client) for each new client, before it connects
  onOpen: [], // fn(client, again) each time a client connects; again: not the page's first connection
  onSend: [], // fn({method, params, notification} or {raw}) for each request the user sends: params as typed
};


// el builds an element: el("span", {class: "x"}, "text", child). Text is
// always set as text: nothing from the hub is parsed as HTML.
export function el(tag, attrs = {}, ...children) {
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
export function parseExact(text) {
  if (typeof JSON.rawJSON !== "function") return JSON.parse(text);
  return JSON.parse(text, (_k, v, ctx) => (typeof v === "number" && ctx?.source !== undefined && String(v) !== ctx.source ? JSON.rawJSON(ctx.source) : v));
}

export const isRaw = (v) => typeof JSON.isRawJSON === "function" && JSON.isRawJSON(v);

// parseParams parses what a user typed, keeping integers beyond 2^53 as
// BigInt where the browser can (the client sends them as written), so
// that echo [12345678901234567890] is not rounded on the way.
export function parseParams(text) {
  return JSON.parse(text, (_k, v, ctx) => (typeof v === "number" && !Number.isSafeInteger(v) && /^-?\d+$/.test(ctx?.source ?? "") ? BigInt(ctx.source) : v));
}

// inline writes v as JSON on one line, with a space after colons and commas.
export function inline(v) {
  if (typeof v === "bigint") return String(v);
  if (v === null || typeof v !== "object" || isRaw(v)) return JSON.stringify(v) ?? "undefined";
  if (Array.isArray(v)) return "[" + v.map(inline).join(", ") + "]";
  return "{" + Object.entries(v).map(([k, x]) => JSON.stringify(k) + ": " + inline(x)).join(", ") + "}";
}

// pretty writes v as indented JSON, keeping what fits on a short line on one.
export function pretty(v, indent = "") {
  const one = inline(v);
  if (one.length + indent.length <= 60 || v === null || typeof v !== "object" || isRaw(v)) return one;
  const next = indent + "  ";
  const lines = Array.isArray(v) ? v.map((x) => next + pretty(x, next)) : Object.entries(v).map(([k, x]) => next + JSON.stringify(k) + ": " + pretty(x, next));
  const [open, close] = Array.isArray(v) ? ["[", "]"] : ["{", "}"];
  return `${open}\n${lines.join(",\n")}\n${indent}${close}`;
}

const tokenRE = /("(?:\\.|[^"\\])*")(\s*:)?|\b(true|false|null)\b|(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)/g;

// jsonView renders a value (or unparsable text) as highlighted JSON.
export function jsonView(value, { raw = false } = {}) {
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
export function prettyText(text) {
  try {
    return { value: parseExact(text), ok: true };
  } catch (err) {
    return { value: text, ok: false, error: err };
  }
}

export const explanations = {
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

export function errorView(err) {
  if (err instanceof RPCError) {
    const body = { code: err.code, message: err.message };
    if (err.data !== undefined) body.data = err.data;
    return [jsonView(body), explanations[err.code] && el("p", { class: "explain" }, explanations[err.code])];
  }
  if (err instanceof TimeoutError) return [el("p", { class: "explain" }, err.message)];
  if (err instanceof ConnectionError) return [el("p", { class: "explain" }, `${err.name}: ${err.message}`)];
  return [el("p", { class: "explain" }, String(err?.message ?? err))];
}

/**
 * copyText puts the text of the element textId on the clipboard and says so
 * in the element noteId; where the page may not write the clipboard, it
 * selects the text for the keyboard instead.
 */
export async function copyText(textId, noteId) {
  try {
    await navigator.clipboard.writeText($(textId).textContent);
    $(noteId).textContent = "Copied.";
  } catch {
    getSelection().selectAllChildren($(textId));
    $(noteId).textContent = "Selected: copy it with the keyboard.";
  }
}

export const clock = (d = new Date()) => d.toLocaleTimeString(undefined, { hour12: false }) + "." + String(d.getMilliseconds()).padStart(3, "0");
export const ms = (t) => (t < 1000 ? `${Math.round(t)} ms` : `${(t / 1000).toFixed(t < 10000 ? 2 : 1)} s`);
