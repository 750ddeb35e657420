// Unit tests of switchboard.js with several hub URLs, the nodes of a
// cluster, against an in-memory WebSocket: the order it dials them in,
// what connect says when none answers, and resuming on another node.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client, connect, ConnectionError, MissedEvent } from "../switchboard.js";
import { FakeNet, states, open, reply } from "./fakews.js";

const A = "ws://a.test/rpc";
const B = "ws://b.test/rpc";
const C = "ws://c.test/rpc";



test("urls lists the URLs once each, in order; url is the current one", async (t) => {
  const { client } = await open(t, [A, B, A, new URL(C)]);
  assert.deepEqual(client.urls, [A, B, C]);
  assert.equal(client.url, A);
  assert.throws(() => new Client([]), TypeError);
});

test("connect tries the URLs in turn, at once, until one answers", async (t) => {
  const net = new FakeNet();
  const p = connect([A, B, C], { WebSocket: net.WebSocket, probe: false, minBackoff: 60_000 });
  const a = await net.next();
  assert.equal(a.url, A);
  a.refuse();
  const b = await net.next(); // no backoff pause: minBackoff is a minute
  assert.equal(b.url, B);
  b.accept();
  const client = await p;
  t.after(() => client.close());
  assert.equal(client.url, B);
});

test("connect rejects once every URL has failed, with each one's reason", async () => {
  const net = new FakeNet();
  const p = connect([A, B], { WebSocket: net.WebSocket, probe: false });
  (await net.next()).refuse();
  (await net.next()).close(1011, "internal error");
  const err = await p.catch((e) => e);
  assert.ok(err instanceof ConnectionError, String(err));
  assert.match(err.message, /^cannot connect to any hub: ws:\/\/a\.test\/rpc: closed abnormally \(1006\); ws:\/\/b\.test\/rpc: internal error \(1011\)$/);
  assert.equal(err.closeCode, 1011);
});

test("after a loss each attempt goes to the next URL, and round again, after a backoff pause", async (t) => {
  const { net, client, peer, st } = await open(t, [A, B, C]);
  assert.equal(peer.url, A);

  let down = st.until("disconnected");
  peer.close(1006, "");
  const lost = await down;
  assert.equal(lost.url, A, "the URL lost");
  assert.ok(lost.delay >= 0.5, `a backoff pause (${lost.delay} ms) before the next node`);
  const connecting = await st.until("connecting");
  assert.equal(connecting.url, B);
  const b = await net.next();
  assert.equal(b.url, B);
  down = st.until("disconnected");
  b.refuse();
  assert.equal((await down).url, B);
  const c = await net.next();
  assert.equal(c.url, C);
  down = st.until("disconnected");
  c.refuse();
  await down;
  const a = await net.next();
  assert.equal(a.url, A, "round again");
  const up = st.until("open");
  a.accept();
  assert.equal((await up).url, A);
  assert.equal(client.url, A);
});

test("a subscription resumes on another node: without loss on the same stream, with a MissedEvent on another", async (t) => {
  const { net, client, peer, st } = await open(t, [A, B]);
  const got = [];
  const p = client.subscribe("news", (ev) => got.push(ev instanceof MissedEvent ? `missed since ${ev.since.seq}` : `${ev.epoch}:${ev.data}`));
  await reply(peer, { topics: ["news"], epoch: "E", seq: 5 });
  const sub = await p;
  peer.send({ jsonrpc: "2.0", method: "rpc.event", params: { topic: "news", data: "a", seq: 6, epoch: "E" } });

  // Node A goes away; B shares the stream (epoch E) and replays.
  let down = st.until("disconnected");
  peer.close(1006, "");
  await down;
  const b = await net.next();
  assert.equal(b.url, B);
  b.accept();
  let batch = await b.read();
  assert.deepEqual(batch[0].params, { topic: "news", since: { epoch: "E", seq: 6 } });
  b.send({ jsonrpc: "2.0", method: "rpc.event", params: { topic: "news", data: "b", seq: 7, epoch: "E", replay: "news" } });
  let up = st.until("open");
  b.send([{ jsonrpc: "2.0", id: batch[0].id, result: { topics: ["news"], epoch: "E", seq: 7, recovered: true } }]);
  await up;
  b.send({ jsonrpc: "2.0", method: "rpc.event", params: { topic: "news", data: "c", seq: 8, epoch: "E" } });
  assert.deepEqual(got, ["E:a", "E:b", "E:c"]);

  // Node B goes away; A is back with a stream of its own (epoch F).
  down = st.until("disconnected");
  b.close(1006, "");
  await down;
  const a = await net.next();
  assert.equal(a.url, A);
  a.accept();
  batch = await a.read();
  assert.deepEqual(batch[0].params.since, { epoch: "E", seq: 8 });
  up = st.until("open");
  a.send([{ jsonrpc: "2.0", id: batch[0].id, result: { topics: ["news"], epoch: "F", seq: 40, recovered: false } }]);
  await up;
  a.send({ jsonrpc: "2.0", method: "rpc.event", params: { topic: "news", data: "d", seq: 41, epoch: "F" } });
  assert.deepEqual(got, ["E:a", "E:b", "E:c", "missed since 8", "F:d"]);
  assert.deepEqual(sub.position, { epoch: "F", seq: 41 });
});
