// Drives switchboard.js in Node.js against a running demo hub; the Go test
// TestSwitchboardJS starts the hub and runs this with node.
// Usage: node smoke.mjs ws://host/rpc
// Node.js 20 has no WebSocket of its own: the ws package (a devDependency,
// installed by npm ci) is passed in, as a Node.js program would; without it
// the test runs node with --experimental-websocket.
import { connect, RPCError, TimeoutError } from "../switchboard.js";

const { WebSocket } = await import("ws").catch(() => globalThis);
const url = process.argv[2];
const check = (cond, what) => {
  if (!cond) throw new Error("failed: " + what);
  console.log("ok", what);
};

const a = await connect(url, { WebSocket });
const b = await connect(url, { WebSocket });

check((await a.call("add", [1, 2])) === 3, "call by position");
check((await a.call("subtract", { minuend: 42, subtrahend: 23 })) === 19, "call by name");
try {
  await a.call("nope");
  check(false, "unknown method rejects");
} catch (err) {
  check(err instanceof RPCError && err.code === -32601, "unknown method rejects with RPCError -32601");
}

const out = await a.batch([
  { method: "sum", params: [1, 2, 4] },
  { method: "notify_hello", params: [7], notification: true },
  { method: "get_data" },
  { method: "nope" },
]);
check(
  out[0].value === 7 && out[1].value === undefined && out[2].value[0] === "hello" && out[3].reason.code === -32601,
  "batch, answers in order",
);

// Topics: b subscribes twice (one rpc.subscribe), a publishes.
const got = [];
let resolveEvent;
const event = new Promise((r) => (resolveEvent = r));
const onEvent = (ev) => {
  got.push(ev);
  resolveEvent();
};
const s1 = await b.subscribe("chat.*", onEvent);
const s2 = await b.subscribe("chat.>", onEvent);
check((await a.publish("chat.room1", { text: "hi" })) === 1, "publish reaches one subscriber");
await event;
check(got.length === 1 && got[0].topic === "chat.room1" && got[0].data.text === "hi", "event delivered once to the handler");
await s1.unsubscribe();
await s2.unsubscribe();
check((await a.publish("chat.room1", 2)) === 0, "unsubscribed");

// The hub calls the client back.
b.register("whoami", (params) => ({ me: "b", asked: params }));
const who = await b.call("callback", { method: "whoami", params: ["x"] });
check(who.me === "b" && who.asked[0] === "x", "server-to-client call");
b.register("fail", () => {
  throw new RPCError(4001, "refused", { why: "test" });
});
try {
  await b.call("callback", { method: "fail" });
  check(false, "callback error rejects");
} catch (err) {
  check(err.code === 4001 && err.message === "refused" && err.data.why === "test", "client error passes through the hub");
}

// Progress, cancellation, timeout.
const progress = [];
const slept = await a.call("sleep", { ms: 250 }, { onProgress: (d) => progress.push(d) });
check(slept.slept === 250 && progress.length >= 1, "progress reported");
const ctl = new AbortController();
const pending = a.call("sleep", { ms: 60000 }, { signal: ctl.signal, onProgress: () => ctl.abort(new Error("stop")) });
try {
  await pending;
  check(false, "aborted call rejects");
} catch (err) {
  check(err.message === "stop", "abort rejects at once");
}
try {
  await a.call("sleep", { ms: 60000 }, { timeout: 50 });
  check(false, "timed out call rejects");
} catch (err) {
  check(err instanceof TimeoutError, "timeout rejects with TimeoutError");
}
check((await a.call("echo", { x: [1] })).x[0] === 1, "connection fine after cancel");

a.close();
b.close();
console.log("done");
