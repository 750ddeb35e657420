// Unit tests of switchboard.js's streams and routing against an in-memory
// WebSocket: resuming subscriptions from their position, missed events,
// presence, history, and providing methods through the hub.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client, RPCError, ErrorCode, MissedEvent } from "../switchboard.js";
import { FakeNet, states, open as openClient, reply } from "./fakews.js";

const URL = "ws://hub.test/rpc";
const E = "e1";

const open = (t, options) => openClient(t, URL, options);


const event = (topic, data, seq, extra = {}) => ({ jsonrpc: "2.0", method: "rpc.event", params: { topic, data, seq, epoch: E, ...extra } });

// subscribed subscribes handler to pattern, answering at head.
async function subscribed(client, peer, pattern, handler, options, result = { topics: [pattern], epoch: E, seq: 0 }) {
  const p = client.subscribe(pattern, handler, options);
  const req = await reply(peer, result);
  return { sub: await p, req };
}

// reconnect drops peer's connection and accepts the next one, returning
// it with the batch the client sent first.
async function reconnect(net, peer, st) {
  const down = st.until("disconnected");
  peer.close(1006, "");
  await down;
  const next = await net.next();
  next.accept();
  return { next, batch: await next.read() };
}

test("after a reconnection a subscription resumes from its last event: every event once, in order", async (t) => {
  const { net, client, peer, st } = await open(t);
  const got = [];
  const { sub } = await subscribed(client, peer, "chat.>", (ev) => got.push(ev.missed ? "missed" : ev.data));
  peer.send(event("chat.a", "x", 1));
  peer.send(event("chat.b", "y", 2));
  assert.deepEqual(sub.position, { epoch: E, seq: 2 });

  const { next, batch } = await reconnect(net, peer, st);
  const up = st.until("open");
  assert.deepEqual(batch.map((m) => [m.method, m.params]), [["rpc.subscribe", { topic: "chat.>", since: { epoch: E, seq: 2 } }]]);
  // The replay may come before the answer; a live event at or before the
  // answer's position is not the subscription's.
  next.send(event("chat.a", "r3", 3, { replay: "chat.>" }));
  next.send(event("chat.a", "dup", 2, { replay: "chat.>" }));
  next.send(event("chat.a", "early", 4));
  assert.deepEqual(got, ["x", "y"], "held until the answer is in");
  next.send([{ jsonrpc: "2.0", id: batch[0].id, result: { topics: ["chat.>"], epoch: E, seq: 4, recovered: true } }]);
  await up;
  next.send(event("chat.a", "r4", 4, { replay: "chat.>" }));
  next.send(event("chat.b", "live", 5));
  next.send(event("chat.b", "again", 5));
  assert.deepEqual(got, ["x", "y", "r3", "r4", "live"]);
  assert.deepEqual(sub.position, { epoch: E, seq: 5 });
});

test("a resume the hub cannot complete gives the handler a MissedEvent before the events that follow", async (t) => {
  const { net, client, peer, st } = await open(t);
  const got = [];
  await subscribed(client, peer, "news", (ev) => got.push(ev instanceof MissedEvent ? `missed since ${ev.since.seq}` : ev.data));
  peer.send(event("news", "a", 7));

  let { next, batch } = await reconnect(net, peer, st);
  next.send(event("news", "b", 9, { replay: "news" }));
  next.send([{ jsonrpc: "2.0", id: batch[0].id, result: { topics: ["news"], epoch: E, seq: 9, recovered: false } }]);
  await st.until("open");
  next.send(event("news", "c", 10));
  assert.deepEqual(got, ["a", "missed since 7", "b", "c"]);

  // A new epoch (the hub restarted): missed, then the new stream from 1.
  ({ next, batch } = await reconnect(net, next, st));
  assert.deepEqual(batch[0].params.since, { epoch: E, seq: 10 });
  next.send([{ jsonrpc: "2.0", id: batch[0].id, result: { topics: ["news"], epoch: "e2", seq: 1, recovered: false } }]);
  next.send({ jsonrpc: "2.0", method: "rpc.event", params: { topic: "news", data: "d", seq: 1, epoch: "e2", replay: "news" } });
  next.send({ jsonrpc: "2.0", method: "rpc.event", params: { topic: "news", data: "e", seq: 2, epoch: "e2" } });
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(got, ["a", "missed since 7", "b", "c", "missed since 10", "d", "e"]);
});

test("replayed events reach only the subscription of the pattern they are replayed for", async (t) => {
  const { net, client, peer, st } = await open(t);
  const wide = [];
  const narrow = [];
  await subscribed(client, peer, "chat.>", (ev) => wide.push(`${ev.seq}${ev.data}`));
  await subscribed(client, peer, "chat.room1", (ev) => narrow.push(`${ev.seq}${ev.data}`));
  peer.send(event("chat.room1", "", 1));
  assert.deepEqual([wide, narrow], [["1"], ["1"]]);

  const { next, batch } = await reconnect(net, peer, st);
  assert.deepEqual(
    batch.map((m) => m.params),
    [
      { topic: "chat.>", since: { epoch: E, seq: 1 } },
      { topic: "chat.room1", since: { epoch: E, seq: 1 } },
    ],
  );
  const ok = { epoch: E, seq: 3, recovered: true };
  next.send(event("chat.room1", "w", 2, { replay: "chat.>" }));
  next.send(event("chat.room1", "n", 2, { replay: "chat.room1" }));
  next.send(event("chat.room2", "w", 3, { replay: "chat.>" }));
  next.send(batch.map((m) => ({ jsonrpc: "2.0", id: m.id, result: { topics: [m.params.topic], ...ok } })));
  await st.until("open");
  next.send(event("chat.room1", "", 4));
  assert.deepEqual(wide, ["1", "2w", "3w", "4"]);
  assert.deepEqual(narrow, ["1", "2n", "4"]);
});

test("subscribe from a saved position asks the hub for the events after it", async (t) => {
  const { client, peer } = await open(t);
  const got = [];
  const p = client.subscribe("orders.>", (ev) => got.push(ev.missed ? "missed" : ev.seq), { since: { epoch: E, seq: 40 } });
  const req = await peer.read();
  assert.deepEqual(req.params, { topic: "orders.>", since: { epoch: E, seq: 40 } });
  peer.send(event("orders.1", 0, 41, { replay: "orders.>" }));
  peer.send({ jsonrpc: "2.0", id: req.id, result: { topics: ["orders.>"], epoch: E, seq: 41, recovered: true } });
  const sub = await p;
  peer.send(event("orders.2", 0, 42));
  assert.deepEqual(got, [41, 42]);
  assert.deepEqual(sub.position, { epoch: E, seq: 42 });
  await assert.rejects(client.subscribe("x", () => {}, { since: 5 }), TypeError);
});

test("presence: subscribe with onPresence gets joins and leaves; presence() and history() ask the hub", async (t) => {
  const { client, peer } = await open(t);
  const seen = [];
  const { req } = await subscribed(client, peer, "room", (ev) => seen.push(["event", ev.data]), {
    onPresence: (c) => seen.push([c.join ? "join" : "leave", c.peer.user]),
  });
  assert.deepEqual(req.params, { topic: "room", presence: true });
  const bob = { id: "p2", user: "bob" };
  peer.send({ jsonrpc: "2.0", method: "rpc.join", params: { topic: "room", peer: bob } });
  peer.send(event("room", "hi", 1));
  peer.send({ jsonrpc: "2.0", method: "rpc.leave", params: { topic: "room", peer: bob } });
  assert.deepEqual(seen, [["join", "bob"], ["event", "hi"], ["leave", "bob"]]);

  const who = client.presence("room");
  assert.deepEqual((await reply(peer, { peers: [bob] })).params, { topic: "room" });
  assert.deepEqual(await who, [bob]);

  const h = client.history("room", { limit: 2, since: { epoch: E, seq: 0 } });
  const hreq = await reply(peer, { epoch: E, seq: 1, events: [{ topic: "room", data: "hi", seq: 1 }] });
  assert.deepEqual(hreq.params, { topic: "room", limit: 2, since: { epoch: E, seq: 0 } });
  assert.deepEqual(await h, { epoch: E, seq: 1, events: [{ topic: "room", data: "hi", seq: 1, epoch: E }] });
});

test("provide serves forwarded calls by name and pattern, as register does", async (t) => {
  const { client, peer } = await open(t);
  const p = client.provide("billing.charge", async (params, ctx) => {
    ctx.progress({ step: 1 });
    if (params.cents < 0) throw new RPCError(4002, "negative", { cents: params.cents });
    return { ok: params.cents };
  });
  assert.deepEqual((await reply(peer, { methods: ["billing.charge"] })).params, { methods: ["billing.charge"] });
  const charge = await p;
  assert.equal(charge.method, "billing.charge");
  const q = client.provide("text.*", (params, ctx) => `${ctx.method}:${params[0]}`);
  await reply(peer, { methods: ["text.*"] });
  await q;

  peer.send({ jsonrpc: "2.0", method: "billing.charge", params: { cents: 5 }, id: 1 });
  assert.deepEqual(await peer.read(), { jsonrpc: "2.0", method: "rpc.progress", params: { id: 1, data: { step: 1 } } });
  assert.deepEqual(await peer.read(), { jsonrpc: "2.0", result: { ok: 5 }, id: 1 });
  peer.send({ jsonrpc: "2.0", method: "billing.charge", params: { cents: -1 }, id: 2 });
  await peer.read(); // progress
  assert.deepEqual(await peer.read(), { jsonrpc: "2.0", error: { code: 4002, message: "negative", data: { cents: -1 } }, id: 2 });
  peer.send({ jsonrpc: "2.0", method: "text.upper", params: ["a"], id: 3 });
  assert.deepEqual(await peer.read(), { jsonrpc: "2.0", result: "text.upper:a", id: 3 });
  await assert.rejects(client.provide("billing.charge", () => {}), TypeError, "provided twice");
  await assert.rejects(client.provide("rpc.x", () => {}), TypeError, "rpc.* is the hub's");

  const w = charge.withdraw();
  assert.deepEqual((await reply(peer, { methods: ["billing.charge"] })).method, "rpc.unprovide");
  await w;
  peer.send({ jsonrpc: "2.0", method: "billing.charge", params: { cents: 5 }, id: 4 });
  assert.equal((await peer.read()).error.code, ErrorCode.MethodNotFound);
});

test("a method withdrawn can be provided again at once, without waiting for the withdrawal", async (t) => {
  const { client, peer } = await open(t);
  const p = client.provide("svc.one", () => "old");
  await reply(peer, { methods: ["svc.one"] });
  const old = await p;
  const w = old.withdraw();
  const again = client.provide("svc.one", () => "new"); // withdraw not awaited
  assert.equal((await reply(peer, {})).method, "rpc.unprovide");
  await w;
  assert.deepEqual((await reply(peer, { methods: ["svc.one"] })).params, { methods: ["svc.one"] });
  const prov = await again;
  assert.equal(prov.method, "svc.one");
  peer.send({ jsonrpc: "2.0", method: "svc.one", id: 1 });
  assert.deepEqual(await peer.read(), { jsonrpc: "2.0", result: "new", id: 1 });
});

test("rpc.cancel aborts a provided method's signal", async (t) => {
  const { client, peer } = await open(t);
  let aborted;
  const p = client.provide("slow", (_params, { signal }) => new Promise((_resolve, reject) => {
    signal.addEventListener("abort", () => {
      aborted = true;
      reject(signal.reason);
    });
  }));
  await reply(peer, { methods: ["slow"] });
  await p;
  peer.send({ jsonrpc: "2.0", method: "slow", id: 7 });
  peer.send({ jsonrpc: "2.0", method: "rpc.cancel", params: { id: 7 } });
  assert.deepEqual(await peer.read(), { jsonrpc: "2.0", error: { code: ErrorCode.Cancelled, message: "Request cancelled" }, id: 7 });
  assert.equal(aborted, true);
});

test("provided methods are provided again after a reconnection, with the subscriptions", async (t) => {
  const { net, client, peer, st } = await open(t);
  await subscribed(client, peer, "a", () => {});
  const p = client.provide("svc.one", () => 1);
  await reply(peer, { methods: ["svc.one"] });
  await p;
  const q = client.provide("svc.>", () => 2);
  await reply(peer, { methods: ["svc.>"] });
  const gone = await q;
  const w = gone.withdraw();
  assert.equal((await peer.read()).method, "rpc.unprovide");
  const { next, batch } = await reconnect(net, peer, st);
  await w; // the connection that would answer is gone, and with it the provision
  assert.deepEqual(
    batch.map((m) => [m.method, m.params]),
    [
      ["rpc.subscribe", { topic: "a", since: { epoch: E, seq: 0 } }],
      ["rpc.provide", { methods: ["svc.one"] }],
    ],
  );
});

test("a handler of overlapping subscriptions gets each replayed event once", async (t) => {
  const { net, client, peer, st } = await open(t);
  const got = [];
  const fn = (ev) => got.push(ev.seq);
  await subscribed(client, peer, "chat.>", fn);
  await subscribed(client, peer, "chat.room1", fn);
  peer.send(event("chat.room1", 0, 1));
  assert.deepEqual(got, [1], "live: once");

  const { next, batch } = await reconnect(net, peer, st);
  next.send(event("chat.room1", 0, 2, { replay: "chat.>" }));
  next.send(event("chat.room2", 0, 3, { replay: "chat.>" }));
  next.send(event("chat.room1", 0, 2, { replay: "chat.room1" }));
  next.send(batch.map((m) => ({ jsonrpc: "2.0", id: m.id, result: { topics: [m.params.topic], epoch: E, seq: 3, recovered: true } })));
  await st.until("open");
  next.send(event("chat.room1", 0, 4));
  assert.deepEqual(got, [1, 2, 3, 4]);
});

test("until its answer is in, a new subscription holds events and presence changes, and takes only those after its start", async (t) => {
  const { client, peer } = await open(t);
  await subscribed(client, peer, "chat.>", () => {});
  const got = [];
  const p = client.subscribe("chat.room1", (ev) => got.push(["event", ev.seq]), { onPresence: (c) => got.push([c.join ? "join" : "leave", c.peer.id]) });
  const req = await peer.read();
  assert.deepEqual(req.params, { topic: "chat.room1", presence: true }, "a pattern's twin without presence does not serve one with it");
  peer.send(event("chat.room1", 0, 5)); // published before the hub registered it
  peer.send(event("chat.room1", 0, 6));
  peer.send({ jsonrpc: "2.0", method: "rpc.join", params: { topic: "chat.room1", peer: { id: "p2" } } });
  assert.deepEqual(got, []);
  peer.send({ jsonrpc: "2.0", id: req.id, result: { topics: ["chat.room1"], epoch: E, seq: 5 } });
  const sub = await p;
  assert.deepEqual(got, [["event", 6], ["join", "p2"]]);
  assert.deepEqual(sub.position, { epoch: E, seq: 6 });
});

test("a subscription that holds too much before its answer drops the rest and reports a MissedEvent", async (t) => {
  const { client, peer } = await open(t);
  const got = [];
  const p = client.subscribe("flood", (ev) => got.push(ev.missed ? "missed" : ev.seq));
  const req = await peer.read();
  const n = 10_001;
  for (let i = 1; i <= n; i++) peer.send(event("flood", 0, i));
  peer.send({ jsonrpc: "2.0", id: req.id, result: { topics: ["flood"], epoch: E, seq: 0 } });
  await p;
  assert.equal(got.length, n, "the MissedEvent, then the 10000 held");
  assert.equal(got[0], "missed");
  assert.equal(got[1], 1);
  assert.equal(got.at(-1), n - 1);
});

test("rpc.missed resumes the subscriptions of the patterns it names on the same connection: a MissedEvent, then every later event once", async (t) => {
  const { client, peer, st } = await open(t);
  const statesBefore = st.names();
  const lost = [];
  const kept = [];
  const { sub } = await subscribed(client, peer, "chat.a", (ev) => lost.push(ev.missed ? "missed" : ev.data));
  await subscribed(client, peer, "chat.b", (ev) => kept.push(ev.missed ? "missed" : ev.data));
  peer.send(event("chat.a", "x", 1));
  peer.send(event("chat.b", "y", 2));
  peer.send({ jsonrpc: "2.0", method: "rpc.missed", params: { topics: ["chat.a"], epoch: E, seq: 2 } });
  const req = await peer.read();
  assert.deepEqual([req.method, req.params], ["rpc.subscribe", { topic: "chat.a", since: { epoch: E, seq: 1 } }]);
  // Until the answer is in, chat.a holds its events; chat.b goes on.
  peer.send(event("chat.a", "live-early", 3));
  peer.send(event("chat.b", "z", 4));
  peer.send(event("chat.a", "r3", 3, { replay: "chat.a" }));
  assert.deepEqual(lost, ["x"]);
  peer.send({ jsonrpc: "2.0", id: req.id, result: { topics: ["chat.a"], epoch: E, seq: 4, recovered: false } });
  await new Promise((r) => setImmediate(r));
  peer.send(event("chat.a", "live", 5));
  assert.deepEqual(lost, ["x", "missed", "r3", "live"]);
  assert.deepEqual(kept, ["y", "z"]);
  assert.deepEqual(sub.position, { epoch: E, seq: 5 });
  assert.deepEqual(st.names(), statesBefore, "no reconnection");
  assert.equal(peer.pending, 0, "nothing more sent");
});
