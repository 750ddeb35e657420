// switchboard-calls.js: the client's calls of the hub, one way for all of
// them (call, notify, batch, and the client's own rpc.* calls): send once
// the connection is open, wait for the answer, its timeout, its signal or
// the connection's end, and forget. Part of switchboard.js.

import { ClosedError, DisconnectedError, ErrorCode, RPCError, TimeoutError } from "./switchboard-errors.js";
import { checkRequest, encode } from "./switchboard-json.js";

const noTimer = 0;

// Calls is a client's calls in flight and waiting for the connection. It
// sends on link (the client's Connection: state, current, send) and
// reports what no caller can receive with report(error, context).
export class Calls {
  #link;
  #o; // the client's options: callTimeout, failFast
  #report;
  #nextId = 1;
  #pending = new Map(); // id -> {resolve, reject, onProgress}
  #batches = new Set(); // batches in flight: {fail, raws}
  #raws = 0; // messages sent with sendRaw
  #waiting = new Set(); // calls waiting for the connection: {run, fail}

  constructor(link, options, report) {
    this.#link = link;
    this.#o = options;
    this.#report = report;
  }

  // send sends requests (one, or a batch) once the connection is open
  // (options.conn: on that socket, before the client reports "open").
  send(requests, options, isBatch) {
    const timeout = options.timeout ?? this.#o.callTimeout;
    const failFast = options.failFast ?? this.#o.failFast;
    const { signal, onProgress, conn: direct } = options;
    const label = isBatch ? "batch" : requests[0].method;
    return new Promise((resolve, reject) => {
      for (const r of requests) {
        const bad = checkRequest(r);
        if (bad) return reject(bad);
      }
      if (signal?.aborted) return reject(signal.reason);
      const ids = [];
      const results = new Array(requests.length);
      let open = 0; // calls not yet answered
      let timer = noTimer;
      let waiter;
      let batch;
      const cleanup = () => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        if (waiter) this.#waiting.delete(waiter);
        if (batch) this.#batches.delete(batch);
        for (const id of ids) this.#pending.delete(id);
      };
      let done = false;
      const finish = (ok, value) => {
        if (done) return;
        done = true;
        cleanup();
        ok ? resolve(value) : reject(value);
      };
      const stop = (err) => {
        const unanswered = ids.filter((id) => this.#pending.has(id));
        const conn = this.#link.current;
        finish(false, err);
        if (conn?.open) for (const id of unanswered) this.#link.send(conn, `{"jsonrpc":"2.0","method":"rpc.cancel","params":{"id":${id}}}`);
      };
      const onAbort = () => stop(signal.reason);
      signal?.addEventListener("abort", onAbort, { once: true });
      if (timeout > 0 && timeout < Infinity) timer = setTimeout(() => stop(new TimeoutError(label, timeout)), timeout);

      const run = () => {
        const conn = direct ?? this.#link.current;
        const msgs = requests.map((r, i) => {
          const m = { jsonrpc: "2.0", method: r.method };
          if (r.params !== undefined) m.params = r.params;
          if (!r.notification) {
            const id = this.#nextId++;
            m.id = id;
            ids.push(id);
            open++;
            this.#pending.set(id, {
              onProgress,
              resolve: (value) => settle(i, { status: "fulfilled", value }),
              reject: (reason) => (reason instanceof RPCError && isBatch ? settle(i, { status: "rejected", reason }) : finish(false, reason)),
            });
          } else {
            results[i] = { status: "fulfilled", value: undefined };
          }
          return m;
        });
        let text;
        try {
          text = encode(isBatch ? msgs : msgs[0]);
        } catch (err) {
          return finish(false, err);
        }
        if (isBatch && open > 0) {
          batch = { fail: (err) => finish(false, err), raws: this.#raws };
          this.#batches.add(batch);
        }
        this.#link.send(conn, text);
        if (open === 0) finish(true, results);
      };
      const settle = (i, r) => {
        results[i] = r;
        if (--open === 0) finish(true, results);
      };
      const fail = (err) => finish(false, err);

      const state = this.#link.state;
      if (direct || state === "open") return run();
      if (state === "closed") return fail(new ClosedError());
      if (failFast) return fail(new DisconnectedError());
      waiter = { run, fail };
      this.#waiting.add(waiter);
    });
  }

  // ping sends rpc.ping on conn and calls onPong when it is answered.
  ping(conn, onPong) {
    const id = this.#nextId++;
    this.#pending.set(id, { resolve: onPong, reject: () => {} });
    this.#link.send(conn, `{"jsonrpc":"2.0","method":"rpc.ping","id":${id}}`);
  }

  // sendRaw sends text as it is (Client.sendRaw).
  sendRaw(text) {
    this.#raws++;
    this.#link.send(this.#link.current, text);
  }

  // answer takes in a response from the hub.
  answer(m) {
    if (m.id === null) {
      // An error for no id: the hub could not read the request's id. Of
      // our own messages only a batch the hub refused as a whole (over its
      // size limit) is answered so, with -32600; with one batch in flight,
      // and no raw message sent since (it may be the raw message's), it is
      // that. A parse error answers a raw message: the client's own are
      // always JSON.
      const err = m.error ? new RPCError(m.error.code, m.error.message, m.error.data) : new Error("response without id");
      const [batch] = this.#batches;
      if (this.#batches.size === 1 && err.code === ErrorCode.InvalidRequest && batch.raws === this.#raws) batch.fail(err);
      else this.#report(err, "a response without id");
      return;
    }
    const p = this.#pending.get(m.id);
    if (!p) return; // cancelled or timed out, or a raw message's
    this.#pending.delete(m.id);
    if (m.error) p.reject(new RPCError(m.error.code, m.error.message, m.error.data));
    else p.resolve(m.result);
  }

  // progress takes in an rpc.progress of a call.
  progress(p) {
    const onProgress = this.#pending.get(p?.id)?.onProgress;
    if (!onProgress) return;
    try {
      onProgress(p.data);
    } catch (err) {
      this.#report(err, "onProgress");
    }
  }

  // ready sends the calls that waited for the connection.
  ready() {
    const waiting = [...this.#waiting];
    this.#waiting.clear();
    for (const w of waiting) w.run();
  }

  // lost fails the calls in flight with err.
  lost(err) {
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    this.#batches.clear();
    for (const p of pending) p.reject(err);
  }

  // closed fails the calls that wait for the connection with err.
  closed(err) {
    const waiting = [...this.#waiting];
    this.#waiting.clear();
    for (const w of waiting) w.fail(err);
  }
}
