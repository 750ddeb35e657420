// The method picker: the hub's methods from rpc.discover and the system
// methods, each with its signature, what it does, and a params template.
import { $, app, el } from "./playground-view.js";

// The system methods (PROTOCOL.md section 3), described as rpc.discover
// describes the hub's own: params by name, each with its schema.
const str = { type: "string" };
const position = { type: "object", properties: { epoch: str, seq: { type: "integer" } }, required: ["epoch", "seq"] };
const p = (name, schema, required = false) => ({ name, schema, required });
const byName = (...params) => ({ paramStructure: "by-name", params });
const system = [
  { name: "rpc.ping", summary: "Checks that the hub answers; the result is {}.", params: [], result: { schema: { type: "object" } } },
  { name: "rpc.discover", summary: "The hub's methods, as an OpenRPC document (this list comes from it).", params: [], result: { schema: { type: "object" } } },
  { name: "rpc.publish", summary: "Publishes data on a topic; the result says how many peers got it, and the event's position.", example: { topic: "chat.room1", data: "hello" }, ...byName(p("topic", str, true), p("data", {})), result: { schema: { type: "object", properties: { delivered: { type: "integer" }, seq: { type: "integer" }, epoch: str } } } },
  { name: "rpc.subscribe", summary: "Subscribes this connection to a topic. Prefer the Topics panel: it also shows the events.", example: { topic: "chat.*" }, ...byName(p("topic", str, true), p("since", position), p("presence", { type: "boolean" })) },
  { name: "rpc.unsubscribe", summary: "Unsubscribes this connection from a topic.", example: { topic: "chat.*" }, ...byName(p("topic", str, true)) },
  { name: "rpc.history", summary: "The recent events of a topic the hub holds, oldest first, each with its seq; since gives only those after a position. The History panel shows them.", example: { topic: "chat.>", limit: 10 }, ...byName(p("topic", str, true), p("limit", { type: "integer" }), p("since", position)) },
  { name: "rpc.presence", summary: "The peers an event on this topic would reach, with their ids. The Peers panel shows them live.", example: { topic: "chat.room1" }, ...byName(p("topic", str, true)) },
  { name: "rpc.provide", summary: "Serves methods (names or patterns) to every other peer through the hub. Prefer the panel of methods this page serves: it also answers the calls.", example: { methods: ["tab.hello"] }, ...byName(p("methods", { type: "array", items: str }, true)) },
  { name: "rpc.unprovide", summary: "Withdraws methods this connection provides.", example: { methods: ["tab.hello"] }, ...byName(p("methods", { type: "array", items: str }, true)) },
  { name: "rpc.whoami", summary: "This connection's own peer id and identity: what rpc.presence shows of it.", params: [], result: { schema: { type: "object", properties: { id: str, user: str, node: str } } } },
  { name: "rpc.call", summary: "Calls a method on one chosen peer (peer: its id), or on every peer of a user or topic: one address of the three. The Peers panel fills it in.", example: { peer: "<peer id>", method: "whoami", params: {} }, ...byName(p("peer", str), p("user", str), p("topic", str), p("method", str, true), p("params", {}), p("timeout", { type: "integer" })) },
];
let methods = new Map();

// discover fills the picker from the hub's rpc.discover, and resolves to
// whether it could.
export async function discover() {
  try {
    const doc = await app.client.call("rpc.discover", undefined, { timeout: 10_000 });
    methods = new Map([...doc.methods, ...system].map((m) => [m.name, m]));
    $("methods").replaceChildren(...[...methods.keys()].map((n) => el("option", { value: n })));
    showMethod(false);
    return true;
  } catch (err) {
    app.note(`rpc.discover failed: ${err.message}`);
    return false;
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

// signature lists a method's params. A method taking an array of any
// length by position (sum) has one descriptor, "params", for each element.
function signature(m) {
  const ps = m.params ?? [];
  if (m.paramStructure === "by-position" && ps.length === 1 && ps[0].name === "params") return `...${ps[0].name}: ${typeOf(ps[0].schema)}`;
  return ps.map((p) => `${p.name}${p.required ? "" : "?"}: ${typeOf(p.schema)}`).join(", ");
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
export function showMethod(fill = true) {
  const m = methods.get($("method").value.trim());
  const info = $("method-info");
  if (!m) {
    info.replaceChildren();
    shown = undefined;
    return;
  }
  if (m === shown) return;
  shown = m;
  const sig = `${m.name}(${signature(m)})${m.result ? " → " + typeOf(m.result.schema) : ""}`;
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
$("method").addEventListener("change", () => {
  if (methods.has($("method").value.trim())) showMethod(true);
  else rediscover();
});
$("method").addEventListener("input", () => {
  if (methods.has($("method").value.trim())) showMethod(true);
});

// rediscover reads rpc.discover again for a method the picker does not
// know: other peers provide methods, and withdraw them, while the page is
// open. At most once every two seconds.
let lastAsked = 0;
async function rediscover() {
  if (Date.now() - lastAsked < 2000) return;
  lastAsked = Date.now();
  if (!(await discover())) return;
  shown = undefined; // discover showed it without the params template
  showMethod(true);
}


// fill puts a call into the Request form, as if typed there.
export function fill(method, params) {
  fillText(method, params === undefined ? "" : JSON.stringify(params));
}

// fillText puts a method and its params, as written, into the form.
export function fillText(method, params) {
  $("tab-method").click();
  $("method").value = method;
  showMethod(false);
  $("params").value = params;
  $("params").focus();
}
