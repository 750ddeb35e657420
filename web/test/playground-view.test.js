// The playground's modules that need no page: how JSON is shown, and how
// the frame log names a message. (Big numbers read exactly need a
// JSON.parse with the source of each value, which Node 20 lacks: the
// browser tests check those.)
import { test } from "node:test";
import assert from "node:assert/strict";
import { inline, pretty } from "../playground-view.js";
import { classify, idKey } from "../playground-classify.js";

test("inline writes BigInt as the integer", () => {
  assert.equal(inline({ a: [12345678901234567890n, null] }), '{"a": [12345678901234567890, null]}');
});

test("pretty keeps what fits on a short line on one", () => {
  assert.equal(pretty([1, 2]), "[1, 2]");
  assert.equal(pretty({ long: "x".repeat(60), n: 1 }), `{\n  "long": "${"x".repeat(60)}",\n  "n": 1\n}`);
});

test("classify names calls, answers, events, progress and batches", () => {
  const call = classify({ jsonrpc: "2.0", method: "add", params: [1, 2], id: 7 }, true);
  assert.equal(call.kind, "call");
  assert.equal(call.summary, "add #7");
  assert.deepEqual(call.ids, [idKey(7)]);
  assert.equal(classify({ jsonrpc: "2.0", method: "rpc.ping", id: 1 }, true).ping, true);
  assert.equal(classify({ jsonrpc: "2.0", id: 7, result: 3 }, true).kind, "result");
  assert.equal(classify({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } }, true).summary, "-32700 Parse error #null");
  assert.equal(classify({ jsonrpc: "2.0", method: "rpc.event", params: { topic: "chat.room1" } }, true).summary, "chat.room1");
  assert.equal(classify({ jsonrpc: "2.0", method: "rpc.progress", params: { id: 7 } }, true).label, "progress");
  const batch = classify([{ jsonrpc: "2.0", method: "a" }, { jsonrpc: "2.0", method: "b", id: "x" }, { jsonrpc: "2.0", method: "c", id: "y" }], true);
  assert.equal(batch.label, "batch of 3");
  assert.equal(batch.summary, "notification, 2 × call");
  assert.deepEqual(batch.ids, ["sx", "sy"]);
  assert.equal(classify("[1,", false).label, "not JSON");
  assert.equal(idKey("7") === idKey(7), false, "a string id is not a number id");
});
