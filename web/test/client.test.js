// Unit tests of switchboard.js against an in-memory WebSocket: what the
// client puts on the wire, and what it makes of what the hub sends.
// Run: node --test test/*.test.js (make web-test).
import { test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import {
  Client,
  connect,
  RPCError,
  ConnectionLostError,
  DisconnectedError,
  ClosedError,
  TimeoutError,
  ErrorCode,
  matches,
  bigNumbersSupported,
} from "../switchboard.js";
import { FakeNet, states, open as openClient, reply, acceptNext, errorsOf } from "./fakews.js";

const URL = "ws://hub.test/rpc";

const open = (t, options) => openClient(t, URL, options);


test("call sends a request and resolves to its result", async (t) => {
  const { client, peer } = await open(t);
  const p = client.call("add", [1, 2]);
  const req = await reply(peer, 3);
  assert.deepEqual(req, { jsonrpc: "2.0", method: "add", params: [1, 2], id: req.id });
  assert.equal(typeof req.id, "number");
  assert.equal(await p, 3);

  const q = client.call("get_data");
  const req2 = await reply(peer, ["hello", 5]);
  assert.equal("params" in req2, false, "no params member for undefined params");
  assert.ok(req2.id > req.id, "ids increase");
  assert.deepEqual(await q, ["hello", 5]);
});

test("an error answer rejects with an RPCError carrying code and data", async (t) => {
  const { client, peer } = await open(t);
  const p = client.call("charge", { amount: 5 });
  const req = await peer.read();
  peer.send({ jsonrpc: "2.0", id: req.id, error: { code: 4001, message: "card declined", data: { retry: false } } });
  const err = await p.catch((e) => e);
  assert.ok(err instanceof RPCError && err instanceof Error);
  assert.equal(err.code, 4001);
  assert.equal(err.message, "card declined");
  assert.deepEqual(err.data, { retry: false });
});

test("params that JSON-RPC cannot carry are refused before sending", async (t) => {
  const { client, peer } = await open(t);
  for (const bad of [5, "x", null, true]) {
    await assert.rejects(client.call("add", bad), TypeError);
  }
  assert.equal(peer.pending, 0);
});

test("notify sends a notification, without id", async (t) => {
  const { client, peer } = await open(t);
  await client.notify("update", [1, 2, 3]);
  assert.deepEqual(await peer.read(), { jsonrpc: "2.0", method: "update", params: [1, 2, 3] });
});

test("batch sends one array and settles each element in order", async (t) => {
  const { client, peer } = await open(t);
  const p = client.batch([
    { method: "sum", params: [1, 2, 4] },
    { method: "notify_hello", params: [7], notification: true },
    { method: "nope" },
  ]);
  const msgs = await peer.read();
  assert.ok(Array.isArray(msgs) && msgs.length === 3);
  assert.equal("id" in msgs[1], false);
  // Answers in another order, as the hub may.
  peer.send([
    { jsonrpc: "2.0", id: msgs[2].id, error: { code: -32601, message: "Method not found" } },
    { jsonrpc: "2.0", id: msgs[0].id, result: 7 },
  ]);
  const out = await p;
  assert.deepEqual(out[0], { status: "fulfilled", value: 7 });
  assert.deepEqual(out[1], { status: "fulfilled", value: undefined });
  assert.equal(out[2].status, "rejected");
  assert.equal(out[2].reason.code, ErrorCode.MethodNotFound);
});

test("a batch the hub refuses as a whole rejects", async (t) => {
  const { client, peer } = await open(t);
  const p = client.batch([{ method: "a" }, { method: "b" }]);
  await peer.read();
  peer.send({ jsonrpc: "2.0", id: null, error: { code: -32600, message: "Invalid Request: batch too large" } });
  const err = await p.catch((e) => e);
  assert.ok(err instanceof RPCError);
  assert.equal(err.code, -32600);
});

test("a parse error for a raw message does not fail the batch in flight", async (t) => {
  const { client, peer } = await open(t);
  const errors = errorsOf(client, (e) => [e.context, e.error.code]);
  const p = client.batch([{ method: "sleep", params: { ms: 300 } }, { method: "add", params: [1, 2] }]);
  const reqs = await peer.read();
  client.sendRaw('{"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz]');
  assert.match(await peer.readText(), /foobar, "params"/);
  peer.send({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } });
  peer.send(reqs.map((r, i) => ({ jsonrpc: "2.0", id: r.id, result: i === 0 ? { slept: 300 } : 3 })));
  const out = await p;
  assert.deepEqual(out.map((r) => r.value), [{ slept: 300 }, 3]);
  assert.deepEqual(errors, [["a response without id", -32700]]);
});

test("an Invalid Request without id after a raw message does not fail the batch in flight", async (t) => {
  const { client, peer } = await open(t);
  const errors = errorsOf(client, (e) => [e.context, e.error.code]);
  const p = client.batch([{ method: "a" }, { method: "b" }]);
  const reqs = await peer.read();
  client.sendRaw('{"foo": "boo"}');
  await peer.readText();
  peer.send({ jsonrpc: "2.0", id: null, error: { code: -32600, message: "Invalid Request" } });
  peer.send(reqs.map((r) => ({ jsonrpc: "2.0", id: r.id, result: r.method })));
  assert.deepEqual((await p).map((r) => r.value), ["a", "b"]);
  assert.deepEqual(errors, [["a response without id", -32600]]);
});

test("a trace that throws loses no message, either way", async (t) => {
  const { client, peer } = await open(t, {
    trace: (direction, text) => {
      if (text.includes("12345678901234567890")) throw new TypeError(`cannot show ${direction}`);
    },
  });
  const errors = errorsOf(client, (e) => [e.context, e.error.message]);
  client.sendRaw('{"jsonrpc":"2.0","method":"add","params":[1,2],"id":12345678901234567890}');
  assert.equal(await peer.readText(), '{"jsonrpc":"2.0","method":"add","params":[1,2],"id":12345678901234567890}');
  const p = client.call("echo", [12345678901234567890n]);
  const req = await peer.readText();
  assert.match(req, /"params":\[12345678901234567890\]/);
  peer.send(`{"jsonrpc":"2.0","id":${JSON.parse(req).id},"result":[12345678901234567890]}`);
  assert.deepEqual(await p, [12345678901234567000]);
  assert.deepEqual(errors, [
    ["trace", "cannot show send"],
    ["trace", "cannot show send"],
    ["trace", "cannot show receive"],
  ]);
});

test("a batch of notifications resolves once sent", async (t) => {
  const { client, peer } = await open(t);
  const out = await client.batch([{ method: "a", notification: true }]);
  assert.deepEqual(out, [{ status: "fulfilled", value: undefined }]);
  assert.deepEqual(await peer.read(), [{ jsonrpc: "2.0", method: "a" }]);
});

test("aborting a call rejects with the signal's reason and sends rpc.cancel", async (t) => {
  const { client, peer } = await open(t);
  const ctl = new AbortController();
  const p = client.call("sleep", { ms: 60000 }, { signal: ctl.signal });
  const req = await peer.read();
  const reason = new Error("stop");
  ctl.abort(reason);
  assert.equal(await p.catch((e) => e), reason);
  assert.deepEqual(await peer.read(), { jsonrpc: "2.0", method: "rpc.cancel", params: { id: req.id } });
  // The late answer is ignored; the connection goes on.
  peer.send({ jsonrpc: "2.0", id: req.id, error: { code: -32002, message: "Request cancelled" } });
  const q = client.call("echo", [1]);
  await reply(peer, [1]);
  assert.deepEqual(await q, [1]);
});

test("a signal aborted before the call sends nothing", async (t) => {
  const { client, peer } = await open(t);
  const reason = new Error("early");
  await assert.rejects(client.call("x", undefined, { signal: AbortSignal.abort(reason) }), (e) => e === reason);
  assert.equal(peer.pending, 0);
});

test("a call that times out rejects with TimeoutError and sends rpc.cancel", async (t) => {
  const { client, peer } = await open(t);
  const p = client.call("sleep", { ms: 60000 }, { timeout: 20 });
  const req = await peer.read();
  const err = await p.catch((e) => e);
  assert.ok(err instanceof TimeoutError);
  assert.equal(err.timeout, 20);
  assert.deepEqual(await peer.read(), { jsonrpc: "2.0", method: "rpc.cancel", params: { id: req.id } });
});

test("rpc.progress reaches the call's onProgress", async (t) => {
  const { client, peer } = await open(t);
  const got = [];
  const p = client.call("sleep", { ms: 300 }, { onProgress: (d) => got.push(d) });
  const req = await peer.read();
  peer.send({ jsonrpc: "2.0", method: "rpc.progress", params: { id: req.id, data: { slept: 100 } } });
  peer.send({ jsonrpc: "2.0", method: "rpc.progress", params: { id: req.id, data: { slept: 200 } } });
  peer.send({ jsonrpc: "2.0", id: req.id, result: { slept: 300 } });
  assert.deepEqual(await p, { slept: 300 });
  assert.deepEqual(got, [{ slept: 100 }, { slept: 200 }]);
});

test("a dropped connection fails calls in flight and reconnects", async (t) => {
  const { net, client, peer, st } = await open(t);
  const p = client.call("sleep", { ms: 60000 });
  await peer.read();
  const down = st.until("disconnected");
  peer.close(1001, "going away");
  const err = await p.catch((e) => e);
  assert.ok(err instanceof ConnectionLostError, String(err));
  assert.equal(err.closeCode, 1001);
  assert.equal(err.closeReason, "going away");
  const ev = await down;
  assert.equal(ev.code, 1001);
  assert.equal(ev.reason, "going away");
  assert.equal(ev.attempt, 1);

  const { peer: next, opened: up } = await acceptNext(net, st);
  await up;
  assert.deepEqual(st.names(), ["connecting", "open", "disconnected", "connecting", "open"]);
  const q = client.call("add", [2, 2]);
  await reply(next, 4);
  assert.equal(await q, 4);
});

test("calls made while disconnected wait for the connection, or fail fast", async (t) => {
  const { net, client, peer, st } = await open(t);
  const down = st.until("disconnected");
  peer.close(1006, "");
  await down;
  const waiting = client.call("add", [1, 1]);
  await assert.rejects(client.call("add", [1, 1], { failFast: true }), DisconnectedError);
  const next = await net.next();
  next.accept();
  await reply(next, 2);
  assert.equal(await waiting, 2);
});

test("failFast in the options applies to every call", async (t) => {
  const net = new FakeNet();
  const client = new Client(URL, { WebSocket: net.WebSocket, failFast: true, probe: false });
  t.after(() => client.close());
  await assert.rejects(client.call("add", [1, 1]), DisconnectedError); // still connecting
});

test("subscriptions share rpc.subscribe per pattern and reach each handler once per event", async (t) => {
  const { client, peer } = await open(t);
  const f = [];
  const g = [];
  const fn = (ev) => f.push(ev.topic);
  const s1p = client.subscribe("chat.*", fn);
  assert.deepEqual((await reply(peer, { topics: ["chat.*"] })).params, { topic: "chat.*" });
  const s1 = await s1p;
  const s2 = await client.subscribe("chat.*", fn); // shares the pattern: no message
  const s3p = client.subscribe("chat.>", fn);
  assert.deepEqual((await reply(peer, { topics: ["chat.>"] })).params, { topic: "chat.>" });
  const s3 = await s3p;
  const s4p = client.subscribe("chat.*", (ev) => g.push(ev.data));
  const s4 = await s4p;
  assert.equal(peer.pending, 0, "no further rpc.subscribe");
  assert.deepEqual(client.subscriptions, [s1, s2, s4, s3]);

  peer.send({ jsonrpc: "2.0", method: "rpc.event", params: { topic: "chat.room1", data: "hi" } });
  assert.deepEqual(f, ["chat.room1"], "one handler, three matching subscriptions: one delivery");
  assert.deepEqual(g, ["hi"]);

  await s1.unsubscribe();
  await s4.unsubscribe();
  assert.equal(peer.pending, 0, "chat.* still has s2: no rpc.unsubscribe");
  peer.send({ jsonrpc: "2.0", method: "rpc.event", params: { topic: "chat.room2", data: 1 } });
  assert.deepEqual(f, ["chat.room1", "chat.room2"]);
  assert.deepEqual(g, ["hi"], "unsubscribed handler gets nothing");

  const u = s2.unsubscribe();
  assert.deepEqual((await reply(peer, { topics: ["chat.*"] })).params, { topic: "chat.*" });
  await u;
  assert.equal(s2.active, false);
  assert.deepEqual(client.subscriptions, [s3]);
  await s2.unsubscribe(); // twice is fine
});

test("a subscribe the hub refuses rejects and leaves nothing behind", async (t) => {
  const { client, peer } = await open(t);
  const p = client.subscribe("secret.>", () => {});
  const req = await peer.read();
  peer.send({ jsonrpc: "2.0", id: req.id, error: { code: -32001, message: "Unauthorized" } });
  const err = await p.catch((e) => e);
  assert.equal(err.code, ErrorCode.Unauthorized);
  assert.deepEqual(client.subscriptions, []);
});

test("a subscriber that throws does not stop the others; the error is an error event", async (t) => {
  const { client, peer } = await open(t);
  const errors = errorsOf(client, (e) => [e.context, e.error.message]);
  const got = [];
  const p1 = client.subscribe("news", () => {
    throw new Error("boom");
  });
  await reply(peer, { topics: ["news"] });
  await p1;
  await client.subscribe("news", async () => {
    throw new Error("async boom");
  });
  await client.subscribe("news", (ev) => got.push(ev.data));
  peer.send({ jsonrpc: "2.0", method: "rpc.event", params: { topic: "news", data: 1 } });
  assert.deepEqual(got, [1]);
  await new Promise((r) => setImmediate(r)); // the async subscriber's rejection
  assert.deepEqual(errors, [
    ["subscriber of news", "boom"],
    ["subscriber of news", "async boom"],
  ]);
});

test("an error event nobody handles is logged, not thrown", async (t) => {
  const { client, peer } = await open(t);
  const logged = [];
  t.mock.method(console, "error", (...args) => logged.push(args));
  const p = client.subscribe("news", () => {
    throw new Error("boom");
  });
  await reply(peer, { topics: ["news"] });
  await p;
  peer.send({ jsonrpc: "2.0", method: "rpc.event", params: { topic: "news", data: 1 } });
  assert.equal(logged.length, 1);
  assert.match(String(logged[0][0]), /subscriber of news/);
});

test("after a reconnection, patterns are subscribed again before waiting calls", async (t) => {
  const { net, client, peer, st } = await open(t);
  const events = [];
  const p = client.subscribe("a.*", (ev) => events.push(ev.data));
  await reply(peer, { topics: ["a.*"] });
  await p;
  const q = client.subscribe("b", () => {});
  await reply(peer, { topics: ["b"] });
  await q;

  const down = st.until("disconnected");
  peer.close(1001, "going away");
  await down;
  const waiting = client.call("add", [1, 2]);
  const { peer: next, opened: up } = await acceptNext(net, st);
  const batch = await next.read();
  assert.deepEqual(
    batch.map((m) => [m.method, m.params]),
    [
      ["rpc.subscribe", { topic: "a.*" }],
      ["rpc.subscribe", { topic: "b" }],
    ],
  );
  assert.equal(next.pending, 0, "the waiting call waits for the re-subscription");
  next.send(batch.map((m) => ({ jsonrpc: "2.0", id: m.id, result: { topics: [m.params.topic] } })));
  await up;
  await reply(next, 3);
  assert.equal(await waiting, 3);
  next.send({ jsonrpc: "2.0", method: "rpc.event", params: { topic: "a.x", data: "back" } });
  assert.deepEqual(events, ["back"]);
});

test("a re-subscription the hub refuses is reported; the rest go on", async (t) => {
  const { net, client, peer, st } = await open(t);
  const p = client.subscribe("a", () => {});
  await reply(peer, { topics: ["a"] });
  await p;
  const errors = errorsOf(client);
  peer.close(1001, "");
  const { peer: next, opened: up } = await acceptNext(net, st);
  const [m] = await next.read();
  next.send([{ jsonrpc: "2.0", id: m.id, error: { code: -32001, message: "Unauthorized" } }]);
  await up;
  assert.deepEqual(errors, ["re-subscribing to a"]);
});

test("registered methods answer the hub's calls", async (t) => {
  const { client, peer } = await open(t);
  client.register("greet", async (p, ctx) => {
    assert.equal(ctx.method, "greet");
    return "hello " + p.name;
  });
  client.register("fail", () => {
    throw new RPCError(4001, "refused", { why: "test" });
  });
  client.register("plain", () => {
    throw new Error("broken");
  });
  client.register("nothing", () => {});
  peer.send({ jsonrpc: "2.0", id: "a", method: "greet", params: { name: "x" } });
  assert.deepEqual(await peer.read(), { jsonrpc: "2.0", result: "hello x", id: "a" });
  peer.send({ jsonrpc: "2.0", id: 2, method: "fail" });
  assert.deepEqual(await peer.read(), { jsonrpc: "2.0", error: { code: 4001, message: "refused", data: { why: "test" } }, id: 2 });
  peer.send({ jsonrpc: "2.0", id: 3, method: "plain" });
  assert.deepEqual(await peer.read(), { jsonrpc: "2.0", error: { code: -32000, message: "broken" }, id: 3 });
  peer.send({ jsonrpc: "2.0", id: 4, method: "nope" });
  assert.deepEqual(await peer.read(), { jsonrpc: "2.0", error: { code: -32601, message: "Method not found" }, id: 4 });
  peer.send({ jsonrpc: "2.0", id: null, method: "nothing" });
  assert.deepEqual(await peer.read(), { jsonrpc: "2.0", result: null, id: null });
  peer.send({ jsonrpc: "2.0", id: 5, method: "rpc.ping" });
  assert.deepEqual(await peer.read(), { jsonrpc: "2.0", result: {}, id: 5 });
  assert.throws(() => client.register("rpc.mine", () => {}), TypeError);
});

test("a notification from the hub gets no answer, even when its handler fails", async (t) => {
  const { client, peer } = await open(t);
  const errors = errorsOf(client);
  client.register("tick", () => {
    throw new Error("no");
  });
  peer.send({ jsonrpc: "2.0", method: "tick" });
  peer.send({ jsonrpc: "2.0", method: "unknown" });
  peer.send({ jsonrpc: "2.0", id: 1, method: "rpc.ping" });
  assert.deepEqual(await peer.read(), { jsonrpc: "2.0", result: {}, id: 1 }, "nothing before the ping's answer");
  assert.deepEqual(errors, ["notification tick"]);
});

test("rpc.cancel aborts the handler's signal and the call is answered -32002", async (t) => {
  const { client, peer } = await open(t);
  let started;
  const running = new Promise((r) => (started = r));
  client.register("wait", (_p, { signal, progress }) => {
    progress({ step: 1 });
    started();
    return new Promise((_resolve, reject) => signal.addEventListener("abort", () => reject(signal.reason)));
  });
  peer.send({ jsonrpc: "2.0", id: 7, method: "wait" });
  assert.deepEqual(await peer.read(), { jsonrpc: "2.0", method: "rpc.progress", params: { id: 7, data: { step: 1 } } });
  await running;
  peer.send({ jsonrpc: "2.0", method: "rpc.cancel", params: { id: 7 } });
  assert.deepEqual(await peer.read(), { jsonrpc: "2.0", error: { code: -32002, message: "Request cancelled" }, id: 7 });
});

test("a batch from the hub is answered with one array", async (t) => {
  const { client, peer } = await open(t);
  client.register("double", async (p) => p[0] * 2);
  peer.send([
    { jsonrpc: "2.0", id: 1, method: "double", params: [2] },
    { jsonrpc: "2.0", method: "double", params: [5] },
    { jsonrpc: "2.0", id: 2, method: "nope" },
    5,
  ]);
  const out = await peer.read();
  assert.ok(Array.isArray(out), "one array");
  assert.deepEqual(out, [
    { jsonrpc: "2.0", result: 4, id: 1 },
    { jsonrpc: "2.0", error: { code: -32601, message: "Method not found" }, id: 2 },
    { jsonrpc: "2.0", error: { code: -32600, message: "Invalid Request" }, id: null },
  ]);
});

test("number ids from the hub are echoed exactly as written", async (t) => {
  const { client, peer } = await open(t);
  client.register("echo", (p) => p);
  client.register("slow", (_p, { progress }) => {
    progress(1);
    return true;
  });
  peer.send('{"jsonrpc":"2.0","method":"echo","params":[1],"id":123456789012345678901234567890}');
  assert.equal(await peer.readText(), '{"jsonrpc":"2.0","result":[1],"id":123456789012345678901234567890}');
  peer.send('[{"jsonrpc":"2.0","method":"echo","params":{"id":2},"id":1.50},{"jsonrpc":"2.0","id":  9007199254740993 ,"method":"slow"}]');
  assert.equal(await peer.readText(), '{"jsonrpc":"2.0","method":"rpc.progress","params":{"id":9007199254740993,"data":1}}');
  assert.equal(await peer.readText(), '[{"jsonrpc":"2.0","result":{"id":2},"id":1.50},{"jsonrpc":"2.0","result":true,"id":9007199254740993}]');
});

test("bigNumbers reads integers beyond 2^53 exactly, and BigInt params are sent as numbers", async (t) => {
  const { client, peer } = await open(t, { bigNumbers: true });
  const p = client.call("echo", [12345678901234567890n, 1.5, 7]);
  const text = await peer.readText();
  assert.match(text, /"params":\[12345678901234567890,1.5,7\]/);
  const { id } = JSON.parse(text);
  peer.send(`{"jsonrpc":"2.0","id":${id},"result":[12345678901234567890,1.5,7,-9007199254740993]}`);
  const got = await p;
  if (bigNumbersSupported) {
    assert.deepEqual(got, [12345678901234567890n, 1.5, 7, -9007199254740993n]);
  } else {
    // Documented: without JSON.parse source text access (Node.js 20
    // without --harmony-json-parse-with-source), big integers round.
    assert.equal(typeof got[0], "number");
  }
});

test("a token is offered as a WebSocket subprotocol, fetched again for each connection", async (t) => {
  let n = 0;
  const { net, peer, st } = await open(t, { token: () => `tök-${++n}` });
  assert.deepEqual(peer.protocols, ["switchboard", "switchboard.bearer." + Buffer.from("tök-1").toString("base64url")]);
  peer.close(1001, "");
  const { peer: next, opened: up } = await acceptNext(net, st, "switchboard");
  await up;
  assert.equal(next.protocols[1], "switchboard.bearer." + Buffer.from("tök-2").toString("base64url"));
});

test("without a token no subprotocol is offered", async (t) => {
  const { peer } = await open(t);
  assert.deepEqual(peer.protocols, []);
});

test("a ping unanswered by the next one drops the connection and reconnects", async (t) => {
  const { net, peer, st } = await open(t, { pingInterval: 100 });
  const ping = await peer.read();
  assert.equal(ping.method, "rpc.ping");
  peer.send({ jsonrpc: "2.0", id: ping.id, result: {} }); // answered: the connection stays
  const ping2 = await peer.read();
  assert.equal(ping2.method, "rpc.ping");
  const down = st.until("disconnected");
  // ping2 goes unanswered.
  const closed = await peer.closed;
  assert.equal(closed.code, 4000);
  assert.match((await down).reason, /no answer to rpc.ping/);
  const next = await net.next(); // and the client dials again
  assert.equal(next.url, URL);
});

test("a handshake that hangs is given up after connectTimeout", async (t) => {
  const net = new FakeNet();
  const client = new Client(URL, { WebSocket: net.WebSocket, connectTimeout: 20, probe: false });
  t.after(() => client.close());
  const st = states(client);
  const down = st.until("disconnected");
  await net.next(); // never accepted
  assert.equal((await down).reason, "connect timeout");
});

test("the client gives up after maxAttempts and rejects what waits", async (t) => {
  const net = new FakeNet();
  const client = new Client(URL, { WebSocket: net.WebSocket, maxAttempts: 2, minBackoff: 1, maxBackoff: 1, probe: false });
  t.after(() => client.close());
  const st = states(client);
  const closed = st.until("closed");
  const waiting = client.call("add", [1, 2]);
  for (let i = 0; i < 3; i++) (await net.next()).refuse();
  const ev = await closed;
  assert.ok(ev.error instanceof ClosedError);
  assert.match(ev.error.message, /gave up after 2 attempts/);
  assert.deepEqual(st.names(), ["connecting", "disconnected", "connecting", "disconnected", "connecting", "closed"]);
  await assert.rejects(waiting, ClosedError);
});

test("close rejects calls, ends subscriptions and reports closed last", async (t) => {
  const { client, peer, st } = await open(t);
  const s = client.subscribe("x", () => {});
  await reply(peer, { topics: ["x"] });
  const sub = await s;
  const p = client.call("sleep", { ms: 60000 });
  await peer.read();
  client.close();
  await assert.rejects(p, ClosedError);
  assert.equal(sub.active, false);
  assert.deepEqual(client.subscriptions, []);
  assert.deepEqual(await peer.closed, { code: 1000, reason: "" });
  assert.equal(st.names().at(-1), "closed");
  assert.equal(client.state, "closed");
  await assert.rejects(client.call("add", [1, 2]), ClosedError);
  await assert.rejects(client.subscribe("y", () => {}), ClosedError);
});

test("connect rejects with the reason a probe of the hub found", async (t) => {
  // A hub that refuses every request without a token, as with -token-file.
  const server = http.createServer((req, res) => {
    res.writeHead(401, { "Content-Type": "application/json", "WWW-Authenticate": 'Bearer realm="switchboard"' });
    res.end('{"jsonrpc":"2.0","error":{"code":-32001,"message":"Unauthorized"},"id":null}');
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  t.after(() => server.close());
  const net = new FakeNet();
  const p = connect(`ws://127.0.0.1:${server.address().port}/rpc`, { WebSocket: net.WebSocket });
  (await net.next()).refuse();
  const err = await p.catch((e) => e);
  assert.match(err.message, /HTTP 401 Unauthorized \(the hub needs a token\)/);
  assert.equal(err.closeCode, 1006);
});

test("connect resolves once open", async (t) => {
  const net = new FakeNet();
  const p = connect(URL, { WebSocket: net.WebSocket });
  (await net.next()).accept();
  const client = await p;
  t.after(() => client.close());
  assert.equal(client.state, "open");
});

test("a Client without a WebSocket implementation says what to do", () => {
  const saved = globalThis.WebSocket;
  globalThis.WebSocket = undefined;
  try {
    assert.throws(() => new Client(URL), /options.WebSocket/);
  } finally {
    globalThis.WebSocket = saved;
  }
});

test("matches", () => {
  assert.ok(matches("a.>", "a.b.c"));
  assert.ok(!matches("a.>", "a"));
  assert.ok(!matches("a.*", "a.b.c"));
  assert.ok(matches("a.*", "a.b"));
  assert.ok(matches("*", "x"));
  assert.ok(!matches("a.b", "a.b.c"));
});

// jwt returns an unsigned token with sub and an exp secs from now: the
// client reads exp, the hub (not here) verifies.
function jwt(sub, secs) {
  const b64 = (o) => Buffer.from(JSON.stringify(o)).toString("base64url");
  return `${b64({ alg: "HS256", typ: "JWT" })}.${b64({ sub, exp: Math.floor(Date.now() / 1000) + secs })}.sig`;
}

test("a token function's JWT is refreshed with rpc.auth before it expires", async (t) => {
  let n = 0;
  const tokens = [];
  const { peer, st } = await openClient(t, "ws://hub/rpc", {
    token: () => {
      tokens.push(jwt("alice", 2));
      n++;
      return tokens[tokens.length - 1];
    },
  });
  const req = await peer.read(); // within 2 s: before the first token expires
  assert.equal(req.method, "rpc.auth");
  assert.equal(n, 2);
  assert.deepEqual(req.params, { token: tokens[1] });
  peer.send({ jsonrpc: "2.0", id: req.id, result: { user: "alice", expires: null } });
  const again = await peer.read(); // and the new one is refreshed in turn
  assert.equal(again.method, "rpc.auth");
  assert.deepEqual(again.params, { token: tokens[2] });
  assert.ok(!st.names().includes("disconnected"), `states ${st.names()}`);
});

test("a refused token refresh is an error event, and the connection stays", async (t) => {
  const { client, peer, st } = await openClient(t, "ws://hub/rpc", { token: () => jwt("alice", 2) });
  const reported = new Promise((resolve) =>
    client.addEventListener("error", (e) => {
      e.preventDefault();
      resolve(e);
    }),
  );
  const req = await peer.read();
  assert.equal(req.method, "rpc.auth");
  peer.send({ jsonrpc: "2.0", id: req.id, error: { code: -32001, message: "Unauthorized: the token is for another user" } });
  const e = await reported;
  assert.equal(e.context, "refreshing the token");
  assert.match(e.error.message, /token refresh failed: Unauthorized/);
  assert.equal(e.error.cause.code, -32001);
  assert.equal(client.state, "open");
  assert.ok(!st.names().includes("disconnected"), `states ${st.names()}`);
});
