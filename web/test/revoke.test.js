// rpc.revoked (a refreshed token with narrower grants): the subscriptions
// and provided methods the hub ended end in the client too, and the page is
// told; and userWord, the escaping of identities into topic words.
import { test } from "node:test";
import assert from "node:assert/strict";
import { RevokedError, RevokedEvent, ClosedError, userWord } from "../switchboard.js";
import { open, reply, acceptNext } from "./fakews.js";

const URL = "ws://hub.test/rpc";

test("rpc.revoked ends the subscriptions and provisions it names, and is reported", async (t) => {
  const { net, client, peer, st } = await open(t, URL);
  const got = [];
  const newsP = client.subscribe("news.*", (ev) => got.push(ev.topic));
  await reply(peer, { topics: ["news.*"] });
  const news = await newsP;
  const twin = await client.subscribe("news.*", () => {}); // shares the pattern
  const inboxP = client.subscribe("user.alice.>", (ev) => got.push(ev.topic));
  await reply(peer, { topics: ["user.alice.>"] });
  const inbox = await inboxP;
  const billingP = client.provide("billing.*", () => "billed");
  await reply(peer, { methods: ["billing.*"] });
  await billingP;
  const reportP = client.provide("report.x", () => "reported");
  await reply(peer, { methods: ["report.x"] });
  await reportP;

  const revoked = new Promise((resolve) => client.addEventListener("revoked", resolve, { once: true }));
  peer.send({ jsonrpc: "2.0", method: "rpc.revoked", params: { topics: ["news.*"], methods: ["billing.*"] } });
  const ev = await revoked;
  assert.ok(ev instanceof RevokedEvent);
  assert.deepEqual([ev.topics, ev.methods], [["news.*"], ["billing.*"]]);
  for (const s of [news, twin]) {
    assert.equal(s.active, false);
    assert.ok(s.error instanceof RevokedError, "ended with a RevokedError");
    assert.equal(s.error.topic, "news.*");
    assert.match(s.error.message, /revoked/);
  }
  assert.equal(inbox.active, true);
  assert.equal(inbox.error, undefined);
  assert.deepEqual(client.subscriptions, [inbox]);
  await news.unsubscribe(); // nothing to tell the hub
  assert.equal(peer.pending, 0);

  peer.send({ jsonrpc: "2.0", method: "rpc.event", params: { topic: "news.today", data: 1 } });
  assert.deepEqual(got, [], "no event for a revoked subscription");

  // A call of the revoked method is not served by the dropped handler.
  peer.send({ jsonrpc: "2.0", method: "billing.charge", id: 7 });
  const answer = await peer.read();
  assert.equal(answer.error?.code, -32601);
  peer.send({ jsonrpc: "2.0", method: "report.x", id: 8 });
  assert.equal((await peer.read()).result, "reported");

  // After a reconnection only what is still allowed comes back.
  peer.close(1001, "");
  const { peer: next, opened: up } = await acceptNext(net, st);
  const batch = await next.read();
  assert.deepEqual(
    batch.map((m) => [m.method, m.params]),
    [
      ["rpc.subscribe", { topic: "user.alice.>" }],
      ["rpc.provide", { methods: ["report.x"] }],
    ],
  );
  next.send(batch.map((m) => ({ jsonrpc: "2.0", id: m.id, result: m.method === "rpc.provide" ? { methods: ["report.x"] } : { topics: [m.params.topic] } })));
  await up;
});

test("a client's close ends its subscriptions with a ClosedError; unsubscribe with none", async (t) => {
  const { client, peer } = await open(t, URL);
  const aP = client.subscribe("a", () => {});
  await reply(peer, { topics: ["a"] });
  const a = await aP;
  const bP = client.subscribe("b", () => {});
  await reply(peer, { topics: ["b"] });
  const b = await bP;
  const u = a.unsubscribe();
  await reply(peer, { topics: ["a"] });
  await u;
  assert.equal(a.error, undefined);
  client.close();
  assert.equal(b.active, false);
  assert.ok(b.error instanceof ClosedError);
});

test("userWord escapes an identity into one topic word, as the hub does", () => {
  const cases = [
    ["alice", "alice"],
    ["Bob_2-x", "Bob_2-x"],
    ["", ""],
    ["*", ":2a"],
    [">", ":3e"],
    ["a.b", "a:2eb"],
    ["john.doe@example.com", "john:2edoe:40example:2ecom"],
    ["auth0|abc", "auth0:7cabc"],
    [":2a", ":3a2a"],
    ["zoë", "zo:c3:ab"],
  ];
  for (const [id, word] of cases) assert.equal(userWord(id), word, id);
  assert.throws(() => userWord(5), TypeError);
});
