// Compiled by types.test.js with tsc --noEmit: the declarations accept what
// the client accepts, and reject what a typed API forbids.
import { Client, connect, RPCError, MissedEvent, RevokedError, userWord, type Method, type StateEvent, type Position, type PeerInfo, type RevokedEvent } from "../../switchboard.js";

interface API {
  add: Method<[a: number, b: number] | { a: number; b: number }, number>;
  sleep: Method<{ ms: number }, { slept: number }>;
  get_data: Method<[] | undefined, unknown[]>;
}

async function typed() {
  const rpc = await connect<API>("ws://127.0.0.1:8080/rpc");
  const who: string = (await rpc.call("rpc.presence", { topic: "room" })).peers[0].id;
  const held: number = (await rpc.call("rpc.history", { topic: "room", limit: 5 })).events.length;
  console.log(who, held);
  const n: number = await rpc.call("add", [1, 2]);
  const s: { slept: number } = await rpc.call("sleep", { ms: 5 }, { timeout: 100 });
  await rpc.call("get_data");
  await rpc.call("rpc.ping");
  const { delivered } = await rpc.call("rpc.publish", { topic: "t", data: 1 });
  // @ts-expect-error: a string is not a number
  await rpc.call("add", ["1", 2]);
  // @ts-expect-error: sleep needs its params
  await rpc.call("sleep");
  // @ts-expect-error: no such method
  await rpc.call("nope");
  // @ts-expect-error: the result is a number
  const wrong: string = await rpc.call("add", { a: 1, b: 2 });
  const out = await rpc.batch([{ method: "add", params: [1, 2] }, { method: "sleep", params: { ms: 1 }, notification: true }]);
  if (out[0].status === "rejected") console.log(out[0].reason.code);
  return [n, s, delivered, wrong];
}

async function cluster() {
  const rpc = await connect<API>(["ws://10.0.0.1:8080/rpc", new URL("ws://10.0.0.2:8080/rpc")]);
  const on: string = rpc.url;
  const all: string[] = rpc.urls;
  // @ts-expect-error: urls are strings or URLs
  new Client([1, 2]);
  return [on, all, await rpc.call("add", [1, 2])];
}

async function untyped() {
  const rpc = new Client("ws://127.0.0.1:8080/rpc", { token: () => "t", failFast: true, bigNumbers: true });
  rpc.addEventListener("state", (e: StateEvent) => console.log(e.state, e.code, e.reason, e.url));
  rpc.addEventListener("error", (e) => e.preventDefault());
  const anything = await rpc.call("whatever", { x: 1 });
  await rpc.notify("update", [1, 2, 3]);
  const sub = await rpc.subscribe<{ text: string }>("chat.*", (ev) => {
    if (ev.missed) return console.log("reload", ev.since?.seq, ev instanceof MissedEvent);
    console.log(ev.topic, ev.data.text, ev.seq);
  });
  const at: Position | undefined = sub.position;
  await sub.unsubscribe();
  await rpc.subscribe("chat.*", () => {}, { since: at, onPresence: (c) => console.log(c.join, c.peer.id, c.peer.user), timeout: 1000 });
  const h = await rpc.history<string>("chat.>", { limit: 10, since: at });
  console.log(h.epoch, h.events[0].seq, h.events[0].data.length);
  const peers: PeerInfo[] = await rpc.presence("chat.room1");
  const prov = await rpc.provide("billing.*", async (p: { cents: number }, { method, progress }) => {
    progress(method);
    return p.cents;
  });
  await prov.withdraw();
  console.log(peers.length, prov.method);
  const described = await rpc.provide("page.summary", (p: { words: number }) => `${p.words} words`, {
    description: "Summarizes the open page",
    params: { type: "object", properties: { words: { type: "integer" } }, required: ["words"] },
    timeout: 1000,
  });
  console.log(described.description, described.params?.required);
  const off = rpc.register("greet", async (p: { name: string }, { signal, progress }) => {
    progress(1);
    if (signal.aborted) throw new RPCError(4001, "no", { why: "aborted" });
    return "hello " + p.name;
  });
  off();
  // @ts-expect-error: params are an array or an object
  await rpc.call("whatever", 5);
  rpc.close();
  return anything;
}

export { typed, untyped };

async function addressed() {
  const rpc = await connect("ws://127.0.0.1:8080/rpc");
  const me: string = (await rpc.whoami()).id;
  const word: string | undefined = (await rpc.whoami()).userWord;
  const inbox: string = "user." + userWord("john.doe@example.com") + ".inbox";
  console.log(word, inbox);
  rpc.addEventListener("revoked", (e: RevokedEvent) => console.log(e.topics.join(), e.methods.join()));
  const ended = (await rpc.subscribe("news.*", () => {})).error;
  if (ended instanceof RevokedError) console.log(ended.topic);
  const one: number = await rpc.callPeer<number>(me, "add", [1, 2], { timeout: 500 });
  const same = await rpc.callPeer({ peer: me }, "confirm", { amount: 1 });
  const all = await rpc.callTopic<string>("room.7", "draft");
  for (const a of all) {
    if (a.error) console.log(a.peer.id, a.error.code);
    else console.log(a.peer.id, a.result.toUpperCase());
  }
  if (all.truncated) console.log(`${all.asked - all.length} answers left out`);
  if (all.unanswered.length > 0) console.log(`the peers of ${all.unanswered.join(", ")} were not called`);
  const users = await rpc.callPeer({ user: "alice" }, "draft", undefined, { signal: AbortSignal.timeout(100) });
  await rpc.callUser("alice", "draft");
  // @ts-expect-error: one address at a time
  await rpc.callPeer({ user: "alice", topic: "room.7" }, "draft");
  return [one, same, users.length];
}
