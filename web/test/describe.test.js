// Unit tests of switchboard.js's descriptions of the methods it provides,
// against an in-memory WebSocket: what it answers to the hub's
// rpc.discover, which the hub relays (and lists as MCP tools).
import { test } from "node:test";
import assert from "node:assert/strict";
import { open, reply } from "./fakews.js";

const URL = "ws://hub.test/rpc";

// discover asks the client for its rpc.discover document, as the hub does.
async function discover(peer) {
  peer.send({ jsonrpc: "2.0", method: "rpc.discover", id: "d" });
  const res = await peer.read();
  assert.equal(res.id, "d");
  return res.result;
}

test("provide's description and params schema describe the method in rpc.discover", async (t) => {
  const { client, peer } = await open(t, URL);
  const summary = client.provide("page.summary", ({ words }) => `a page in ${words} words`, {
    description: "Summarizes the open page",
    params: { type: "object", properties: { words: { type: "integer" }, lang: { type: "string" } }, required: ["words"] },
    timeout: 5000,
  });
  assert.deepEqual((await reply(peer, { methods: ["page.summary"] })).params, { methods: ["page.summary"] });
  const prov = await summary;
  assert.equal(prov.description, "Summarizes the open page");
  const plain = client.provide("page.title", () => "Home");
  await reply(peer, { methods: ["page.title"] });
  await plain;
  client.register("own", () => 1);

  const doc = await discover(peer);
  assert.deepEqual(doc.methods, [
    { name: "own", paramStructure: "either", params: [{ name: "params", schema: {} }], result: { name: "result", schema: {} } },
    {
      name: "page.summary",
      description: "Summarizes the open page",
      paramStructure: "by-name",
      params: [
        { name: "lang", schema: { type: "string" } },
        { name: "words", schema: { type: "integer" }, required: true },
      ],
      result: { name: "result", schema: {} },
    },
    { name: "page.title", paramStructure: "either", params: [{ name: "params", schema: {} }], result: { name: "result", schema: {} } },
  ]);
});

test("provide refuses a params schema that is not one of an object", async (t) => {
  const { client } = await open(t, URL);
  await assert.rejects(client.provide("a.b", () => 1, { params: { type: "array" } }), TypeError);
  await assert.rejects(client.provide("a.b", () => 1, { params: [] }), TypeError);
  await assert.rejects(client.provide("a.b", () => 1, { description: 5 }), TypeError);
});
