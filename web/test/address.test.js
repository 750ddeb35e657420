// Unit tests of the client's calls of chosen peers (rpc.call) and of
// whoami, against an in-memory WebSocket.
import { test } from "node:test";
import assert from "node:assert/strict";
import { RPCError, ErrorCode } from "../switchboard.js";
import { open as openClient, reply } from "./fakews.js";

const open = (t, options) => openClient(t, "ws://hub.test/rpc", options);

test("whoami asks the hub for this client's id", async (t) => {
  const { client, peer } = await open(t);
  const p = client.whoami();
  const req = await reply(peer, { id: "p-1", user: "alice" });
  assert.equal(req.method, "rpc.whoami");
  assert.equal("params" in req, false);
  assert.deepEqual(await p, { id: "p-1", user: "alice" });
});

test("callPeer sends rpc.call with the address, and a timeout a little under the call's", async (t) => {
  const { client, peer } = await open(t);
  const p = client.callPeer("p-2", "confirm", { amount: 42 }, { timeout: 1000 });
  const req = await reply(peer, "confirmed");
  assert.deepEqual(req.params, { peer: "p-2", method: "confirm", params: { amount: 42 }, timeout: 950 });
  assert.equal(req.method, "rpc.call");
  assert.equal(await p, "confirmed");

  const q = client.callPeer({ peer: "nobody" }, "confirm");
  const req2 = await peer.read();
  assert.equal("params" in req2.params, false, "no params member for undefined params");
  peer.send({ jsonrpc: "2.0", id: req2.id, error: { code: -32007, message: "No such peer: nobody" } });
  const err = await q.catch((e) => e);
  assert.ok(err instanceof RPCError);
  assert.equal(err.code, ErrorCode.NoSuchPeer);
});

test("callUser and callTopic resolve to one answer per peer, errors as RPCErrors", async (t) => {
  const { client, peer } = await open(t);
  const p = client.callTopic("room.7", "draft", [1]);
  const req = await reply(peer, {
    results: [
      { peer: { id: "a" }, result: "draft a" },
      { peer: { id: "b" }, error: { code: -32003, message: "Request timed out" } },
      { peer: { id: "c" }, result: null },
    ],
  });
  assert.equal(req.params.topic, "room.7");
  const got = await p;
  assert.deepEqual(got[0], { peer: { id: "a" }, result: "draft a" });
  assert.ok(got[1].error instanceof RPCError);
  assert.equal(got[1].error.code, ErrorCode.Timeout);
  assert.deepEqual(got[2], { peer: { id: "c" }, result: null });

  assert.equal(got.truncated, false);
  assert.equal(got.asked, 3);

  const q = client.callUser("alice", "draft");
  const req2 = await reply(peer, { results: [] });
  assert.equal(req2.params.user, "alice");
  const none = await q;
  assert.deepEqual([...none], []);
  assert.equal(none.asked, 0);
});

test("callTopic says when the hub left answers out, and how many peers it asked", async (t) => {
  const { client, peer } = await open(t);
  const p = client.callTopic("room.big", "state");
  await reply(peer, { results: [{ peer: { id: "a" }, result: "x" }], truncated: true, asked: 2000 });
  const got = await p;
  assert.equal(got.length, 1);
  assert.equal(got.truncated, true);
  assert.equal(got.asked, 2000);
});

test("callUser names the nodes of a cluster that did not say in time which peers they have", async (t) => {
  const { client, peer } = await open(t);
  const p = client.callUser("alice", "draft");
  await reply(peer, { results: [{ peer: { id: "a", node: "n1" }, result: "x" }], incomplete: true, unanswered: ["n3"] });
  const got = await p;
  assert.equal(got.length, 1);
  assert.deepEqual(got.unanswered, ["n3"]);
  assert.equal(got.truncated, false);
  const q = client.callUser("alice", "draft");
  await reply(peer, { results: [] });
  assert.deepEqual((await q).unanswered, []);
});

test("callPeer wants exactly one address, and sends nothing otherwise", async (t) => {
  const { client, peer } = await open(t);
  for (const bad of [{}, { peer: "a", user: "b" }, { room: "x" }]) {
    await assert.rejects(client.callPeer(bad, "draft"), TypeError);
  }
  assert.equal(peer.pending, 0);
});

test("aborting callPeer cancels the rpc.call; its progress reaches onProgress", async (t) => {
  const { client, peer } = await open(t);
  const ctl = new AbortController();
  let progressed;
  const progress = new Promise((resolve) => (progressed = resolve));
  const p = client.callPeer("p-3", "work", undefined, { signal: ctl.signal, onProgress: progressed });
  const req = await peer.read();
  peer.send({ jsonrpc: "2.0", method: "rpc.progress", params: { id: req.id, data: "half" } });
  assert.equal(await progress, "half");
  ctl.abort(new Error("stop"));
  await assert.rejects(p, /stop/);
  assert.deepEqual(await peer.read(), { jsonrpc: "2.0", method: "rpc.cancel", params: { id: req.id } });
});
