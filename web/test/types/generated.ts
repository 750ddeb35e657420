// The demo hub's methods as `rpc gen-ts` writes them (the Go test of
// gen-ts keeps that file up to date), used as a Client's type argument.
import { connect } from "@switchboard-rpc/client";
import type { API } from "../../../cmd/rpc/testdata/demo-api.js";

export async function demo() {
  const rpc = await connect<API>("ws://127.0.0.1:8080/rpc");
  const three: number = await rpc.call("add", [1, 2]);
  const nineteen: number = await rpc.call("subtract", { minuend: 42, subtrahend: 23 });
  const sum: number = await rpc.call("sum", [1, 2, 4]);
  const { slept }: { slept: number } = await rpc.call("sleep", { ms: 10 });
  const data: unknown[] = await rpc.call("get_data");
  await rpc.call("echo", { any: ["thing"] });
  await rpc.notify("update", [1, 2, 3, 4, 5]);
  await rpc.call("callback", { method: "whoami" });
  await rpc.call("rpc.ping");
  // @ts-expect-error: add takes numbers
  await rpc.call("add", { a: "1", b: 2 });
  // @ts-expect-error: subtract needs both
  await rpc.call("subtract", { minuend: 42 });
  // @ts-expect-error: sleep's result has no such field
  (await rpc.call("sleep", { ms: 1 })).nope;
  // @ts-expect-error: the demo has no such method
  await rpc.call("multiply", [2, 3]);
  // @ts-expect-error: sum takes numbers by position
  await rpc.call("sum", { a: 1 });
  const out = await rpc.batch([
    { method: "add", params: [1, 2] },
    { method: "update", params: [1], notification: true },
  ]);
  rpc.close();
  return [three, nineteen, sum, slept, data, out];
}
