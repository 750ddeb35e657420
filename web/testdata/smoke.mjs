// Drives switchboard.js against a running demo hub; the Go test
// TestSwitchboardJS starts the hub and runs this with node.
// Usage: node [--experimental-websocket] smoke.mjs ws://host/rpc
import { connect, RPCError, matches } from "../switchboard.js";

const url = process.argv[2];
const check = (cond, what) => {
  if (!cond) throw new Error("failed: " + what);
  console.log("ok", what);
};

const a = await connect(url);
const b = await connect(url);

check((await a.call("add", [1, 2])) === 3, "call by position");
check((await a.call("subtract", { minuend: 42, subtrahend: 23 })) === 19, "call by name");

try {
  await a.call("nope");
  check(false, "unknown method rejects");
} catch (err) {
  check(err instanceof RPCError && err.code === -32601, "unknown method rejects with RPCError -32601");
}

// Topics: b subscribes with a wildcard, a publishes.
const got = [];
let resolveEvent;
const event = new Promise((r) => (resolveEvent = r));
const off = await b.subscribe("chat.*", (data, topic) => {
  got.push([topic, data]);
  resolveEvent();
});
check((await a.publish("chat.room1", { text: "hi" })) === 1, "publish reaches one subscriber");
await event;
check(got[0][0] === "chat.room1" && got[0][1].text === "hi", "event delivered to the subscriber");
await off();
check((await a.publish("chat.room1", 2)) === 0, "unsubscribed");

// The hub calls the client back.
b.handle("whoami", (params) => ({ me: "b", asked: params }));
const who = await b.call("callback", { method: "whoami", params: ["x"] });
check(who.me === "b" && who.asked[0] === "x", "server-to-client call");
b.handle("fail", () => {
  throw new RPCError(4001, "refused", { why: "test" });
});
try {
  await b.call("callback", { method: "fail" });
  check(false, "callback error rejects");
} catch (err) {
  check(err.code === 4001 && err.message === "refused" && err.data.why === "test", "client error passes through the hub");
}

// Progress and cancellation.
const progress = [];
const slept = await a.call("sleep", { ms: 250 }, { onProgress: (d) => progress.push(d) });
check(slept.slept === 250 && progress.length >= 1, "progress reported");
const ctl = new AbortController();
const pending = a.call("sleep", { ms: 60000 }, { signal: ctl.signal });
setTimeout(() => ctl.abort(new Error("stop")), 50);
try {
  await pending;
  check(false, "aborted call rejects");
} catch (err) {
  check(err.message === "stop", "abort rejects at once");
}
// The hub got rpc.cancel: a new call still works right away.
check((await a.call("echo", { x: [1] })).x[0] === 1, "connection fine after cancel");

check(matches("a.>", "a.b.c") && !matches("a.*", "a.b.c") && matches("*", "x") && !matches("a.>", "a"), "matches");

a.close();
b.close();
console.log("done");
