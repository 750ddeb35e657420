// switchboard-serve.js: the client's side of the hub's calls, the methods
// it registers and those it provides: run the handler, let the caller
// cancel it and receive its progress, answer. Part of switchboard.js.

import { ErrorCode, RPCError } from "./switchboard-errors.js";
import { encode, encodeId, response, wireError } from "./switchboard-json.js";

// Handlers is what a client serves: the methods it registers, and through
// provided (a Provided) those it provides. It reports what no caller can
// receive with report(error, context).
export class Handlers {
  #handlers = new Map(); // method -> handler
  #running = new Map(); // key of a hub request being served -> AbortController
  #provided;
  #report;

  constructor(provided, report) {
    this.#provided = provided;
    this.#report = report;
  }

  // register serves method with handler (Client.register).
  register(method, handler) {
    this.#handlers.set(method, handler);
    return () => {
      if (this.#handlers.get(method) === handler) this.#handlers.delete(method);
    };
  }

  // serve runs the request m (id: its id, {raw} for a number id kept as
  // it was written; isCall: it has one) and resolves to the encoded
  // response, or undefined for a notification. send(text) sends on the
  // request's connection while it lasts: rpc.progress.
  async serve(m, id, isCall, send) {
    if (m.params !== undefined && (m.params === null || typeof m.params !== "object")) {
      return isCall ? response(id, { error: { code: -32600, message: "Invalid Request" } }) : undefined;
    }
    const handler = this.#handlers.get(m.method) ?? this.#provided.handlerOf(m.method);
    if (!handler) {
      return isCall ? response(id, { error: { code: ErrorCode.MethodNotFound, message: "Method not found" } }) : undefined;
    }
    const ctl = new AbortController();
    const key = runKey(m.id);
    if (isCall) this.#running.set(key, ctl);
    const progress = (data) => {
      if (!isCall || ctl.signal.aborted) return;
      send(`{"jsonrpc":"2.0","method":"rpc.progress","params":{"id":${encodeId(id)},"data":${encode(data ?? null)}}}`);
    };
    try {
      const result = await handler(m.params, { signal: ctl.signal, progress, id: m.id, method: m.method });
      if (!isCall) return undefined;
      if (ctl.signal.aborted) return response(id, { error: wireError(ctl.signal.reason, true) });
      return response(id, { result: result === undefined ? null : result });
    } catch (err) {
      if (!isCall) {
        this.#report(err, `notification ${m.method}`);
        return undefined;
      }
      return response(id, { error: wireError(err, ctl.signal.aborted) });
    } finally {
      if (this.#running.get(key) === ctl) this.#running.delete(key);
    }
  }

  // cancel aborts the request with id being served (rpc.cancel).
  cancel(id) {
    this.#running.get(runKey(id))?.abort(new RPCError(ErrorCode.Cancelled, "Request cancelled"));
  }

  // abort aborts every request being served with err: the connection is
  // gone.
  abort(err) {
    const running = [...this.#running.values()];
    this.#running.clear();
    for (const ctl of running) ctl.abort(err);
  }

  // describe is the answer to rpc.discover: the methods served by name.
  describe() {
    const provided = new Set(this.#provided.names());
    const methods = [...new Set([...this.#handlers.keys(), ...provided])].sort().map((name) =>
      // A registered method serves first; a provided one is described
      // as provide() was told.
      !this.#handlers.has(name) && provided.has(name)
        ? this.#provided.describe(name)
        : { name, paramStructure: "either", params: [{ name: "params", schema: {} }], result: { name: "result", schema: {} } },
    );
    return { openrpc: "1.3.2", info: { title: "switchboard.js", version: "0.0.0" }, methods };
  }
}

// runKey identifies a request being served, for rpc.cancel.
function runKey(id) {
  return typeof id === "number" || typeof id === "bigint" ? "n" + id : JSON.stringify(id);
}
