// The Raw JSON tab: a message sent exactly as typed, the specification's
// examples, and the reply beside them.
import { $, app, el, jsonView, prettyText, explanations } from "./playground-view.js";
import { frames, classify } from "./playground-frames.js";

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
    const expectNothing = ok && (Array.isArray(value) ? value.length > 0 && value.every(isNotification) : isNotification(value));
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

frames.observers.push((direction, value, ok, info) => rawReplies.observe(direction, value, ok, info));

// isNotification tells a valid notification, the only message the hub
// never answers: a batch of other things ([1, 2, 3]) gets an error each.
function isNotification(m) {
  if (m === null || typeof m !== "object" || Array.isArray(m) || "id" in m) return false;
  return m.jsonrpc === "2.0" && typeof m.method === "string" && (m.params === undefined || (m.params !== null && typeof m.params === "object"));
}

$("pane-raw").addEventListener("submit", (e) => {
  e.preventDefault();
  const text = $("raw").value;
  try {
    app.client.sendRaw(text);
    rawReplies.sent(text);
    for (const fn of app.onSend) fn({ raw: text });
  } catch (err) {
    app.note(`Not sent: ${err.message}`);
  }
});
