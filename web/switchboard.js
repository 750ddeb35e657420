// switchboard.js: a dependency-free JSON-RPC 2.0 client for the Switchboard
// hub, over one WebSocket. Both sides call: the page calls the hub, and the
// hub (or another peer, through it) calls methods the page handles.
//
//   import { connect } from "./switchboard.js";
//   const rpc = await connect("ws://127.0.0.1:8080/rpc");
//   const sum = await rpc.call("add", [1, 2]);            // 3
//   const off = await rpc.subscribe("chat.*", (data, topic) => console.log(topic, data));
//   rpc.handle("ask", async (params) => confirm(params.question));

/** RPCError is a JSON-RPC error object received from the other side. */
export class RPCError extends Error {
  constructor(code, message, data) {
    super(message);
    this.name = "RPCError";
    this.code = code;
    this.data = data;
  }
}

/** connect opens a WebSocket to url and resolves to a Client once it is open. */
export function connect(url, options = {}) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    const client = new Client(ws, options);
    ws.addEventListener("open", () => resolve(client), { once: true });
    ws.addEventListener("error", () => reject(new Error("WebSocket failed to open")), { once: true });
  });
}

/** Client is one WebSocket connection to the hub. */
export class Client {
  #ws;
  #nextID = 1;
  #pending = new Map(); // id -> {resolve, reject, onProgress}
  #handlers = new Map(); // method -> fn(params, {signal})
  #running = new Map(); // id of a call we serve -> AbortController
  #topics = new Map(); // pattern -> Set of fn

  constructor(ws, options = {}) {
    this.#ws = ws;
    this.onclose = options.onclose ?? null;
    ws.addEventListener("message", (e) => this.#receive(e.data));
    ws.addEventListener("close", (e) => {
      const err = new Error(`connection closed (${e.code}${e.reason ? " " + e.reason : ""})`);
      for (const p of this.#pending.values()) p.reject(err);
      this.#pending.clear();
      for (const c of this.#running.values()) c.abort();
      this.onclose?.(e);
    });
  }

  /**
   * call calls method with params (an array or an object) and resolves to
   * its result, or rejects with an RPCError. Aborting options.signal sends
   * rpc.cancel and rejects at once; options.onProgress receives rpc.progress data.
   */
  call(method, params, { signal, onProgress } = {}) {
    const id = this.#nextID++;
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const abort = () => {
        if (this.#pending.delete(id)) {
          this.#send({ jsonrpc: "2.0", method: "rpc.cancel", params: { id } });
          reject(signal.reason);
        }
      };
      signal?.addEventListener("abort", abort, { once: true });
      const done = (fn) => (v) => {
        signal?.removeEventListener("abort", abort);
        fn(v);
      };
      this.#pending.set(id, { resolve: done(resolve), reject: done(reject), onProgress });
      this.#send(request(method, params, id));
    });
  }

  /** notify sends a notification: no reply comes. */
  notify(method, params) {
    this.#send(request(method, params));
  }

  /** publish publishes data on topic and resolves to the number of peers reached. */
  async publish(topic, data) {
    const { delivered } = await this.call("rpc.publish", { topic, data });
    return delivered;
  }

  /**
   * subscribe calls fn(data, topic) for every event on a topic matching
   * pattern ("*" one word, ">" the rest). It resolves to a function that
   * unsubscribes.
   */
  async subscribe(pattern, fn) {
    let fns = this.#topics.get(pattern);
    if (!fns) {
      fns = new Set();
      this.#topics.set(pattern, fns);
      try {
        await this.call("rpc.subscribe", { topic: pattern });
      } catch (err) {
        this.#topics.delete(pattern);
        throw err;
      }
    }
    fns.add(fn);
    return async () => {
      fns.delete(fn);
      if (fns.size === 0 && this.#topics.get(pattern) === fns) {
        this.#topics.delete(pattern);
        await this.call("rpc.unsubscribe", { topic: pattern });
      }
    };
  }

  /**
   * handle serves method for the other side: fn(params, {signal}) returns
   * the result (or a Promise of it); throwing an RPCError chooses the code.
   */
  handle(method, fn) {
    this.#handlers.set(method, fn);
  }

  /** close closes the connection. */
  close(code = 1000, reason = "") {
    this.#ws.close(code, reason);
  }

  #send(msg) {
    this.#ws.send(JSON.stringify(msg));
  }

  #receive(text) {
    let msg;
    try {
      msg = JSON.parse(text);
    } catch {
      return;
    }
    for (const m of Array.isArray(msg) ? msg : [msg]) {
      if (m && typeof m === "object") this.#dispatch(m);
    }
  }

  #dispatch(m) {
    if (m.method === undefined) {
      const p = this.#pending.get(m.id);
      if (!p) return;
      this.#pending.delete(m.id);
      if (m.error) p.reject(new RPCError(m.error.code, m.error.message, m.error.data));
      else p.resolve(m.result);
      return;
    }
    switch (m.method) {
      case "rpc.event":
        this.#event(m.params ?? {});
        return;
      case "rpc.progress":
        this.#pending.get(m.params?.id)?.onProgress?.(m.params.data);
        return;
      case "rpc.cancel":
        this.#running.get(JSON.stringify(m.params?.id))?.abort();
        return;
      case "rpc.ping":
        if ("id" in m) this.#send({ jsonrpc: "2.0", result: {}, id: m.id });
        return;
    }
    this.#serve(m);
  }

  #event({ topic, data }) {
    for (const [pattern, fns] of this.#topics) {
      if (matches(pattern, topic)) for (const fn of fns) fn(data, topic);
    }
  }

  async #serve(m) {
    const isCall = "id" in m;
    const fn = this.#handlers.get(m.method);
    if (!fn) {
      if (isCall) this.#send({ jsonrpc: "2.0", error: { code: -32601, message: "Method not found" }, id: m.id });
      return;
    }
    const key = JSON.stringify(m.id);
    const ctl = new AbortController();
    if (isCall) this.#running.set(key, ctl);
    try {
      const result = await fn(m.params, { signal: ctl.signal });
      if (isCall) this.#send({ jsonrpc: "2.0", result: result ?? null, id: m.id });
    } catch (err) {
      if (!isCall) return;
      const error = err instanceof RPCError
        ? { code: err.code, message: err.message, ...(err.data !== undefined && { data: err.data }) }
        : ctl.signal.aborted
          ? { code: -32002, message: "Request cancelled" }
          : { code: -32000, message: String(err?.message ?? err) };
      this.#send({ jsonrpc: "2.0", error, id: m.id });
    } finally {
      this.#running.delete(key);
    }
  }
}

function request(method, params, id) {
  const msg = { jsonrpc: "2.0", method };
  if (params !== undefined) msg.params = params;
  if (id !== undefined) msg.id = id;
  return msg;
}

/** matches reports whether topic matches a subscription pattern. */
export function matches(pattern, topic) {
  const p = pattern.split("."), t = topic.split(".");
  for (let i = 0; i < p.length; i++) {
    if (p[i] === ">") return t.length > i;
    if (i >= t.length || (p[i] !== "*" && p[i] !== t[i])) return false;
  }
  return p.length === t.length;
}
