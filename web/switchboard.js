// switchboard.js: a dependency-free JSON-RPC 2.0 client for the Switchboard
// hub, over one WebSocket that it keeps open. Both sides call: the page calls
// the hub, and the hub (or another peer, through it) calls the methods the
// page registers. Works in browsers and in Node.js (pass a WebSocket
// implementation, such as the ws package's, in options.WebSocket).
//
//   import { connect } from "@switchboard-rpc/client";
//   const rpc = await connect("ws://127.0.0.1:8080/rpc");
//   await rpc.call("add", [1, 2]);                                   // 3
//   const sub = await rpc.subscribe("chat.*", (ev) => console.log(ev.topic, ev.data));
//   rpc.register("ask", async (params) => confirm(params.question));
//   await rpc.provide("page.*", (params, { method }) => ...);     // other peers call it through the hub
//
// The types are in switchboard.d.ts; the guide is docs/web.md.

/** Error codes of JSON-RPC 2.0 and of the Switchboard protocol. */
export const ErrorCode = Object.freeze({
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  Application: -32000,
  Unauthorized: -32001,
  Cancelled: -32002,
  Timeout: -32003,
  Overloaded: -32004,
  ShuttingDown: -32005,
  ProviderLost: -32006,
  NoSuchPeer: -32007,
});

/** RPCError is a JSON-RPC error: one the other side answered with, or one a
 * registered handler throws to choose the code, message and data it answers. */
export class RPCError extends Error {
  constructor(code, message, data) {
    super(message);
    this.name = "RPCError";
    this.code = code;
    if (data !== undefined) this.data = data;
  }
}

/** ConnectionError is the base of the errors about the connection itself.
 * closeCode and closeReason say how the WebSocket closed, when known. */
export class ConnectionError extends Error {
  constructor(message, { closeCode, closeReason, cause } = {}) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = "ConnectionError";
    if (closeCode !== undefined) this.closeCode = closeCode;
    if (closeReason) this.closeReason = closeReason;
  }
}

/** DisconnectedError: the call was made while the client was disconnected
 * and was not to wait (failFast). It was not sent. */
export class DisconnectedError extends ConnectionError {
  constructor(message = "not connected", init) {
    super(message, init);
    this.name = "DisconnectedError";
  }
}

/** ConnectionLostError: the connection dropped while the call was in
 * flight. It may or may not have run on the other side. */
export class ConnectionLostError extends ConnectionError {
  constructor(message = "connection lost", init) {
    super(message, init);
    this.name = "ConnectionLostError";
  }
}

/** ClosedError: the client is closed, by close() or because it gave up
 * reconnecting (cause says why). */
export class ClosedError extends ConnectionError {
  constructor(message = "client closed", init) {
    super(message, init);
    this.name = "ClosedError";
  }
}

/** TimeoutError: the call's timeout passed first; the hub was told to
 * cancel it (rpc.cancel). */
export class TimeoutError extends Error {
  constructor(method, timeout) {
    super(`${method}: no answer within ${timeout} ms`);
    this.name = "TimeoutError";
    this.timeout = timeout;
  }
}

/** StateEvent ("state") reports a change of the connection's state. url is
 * the hub's URL: the one dialed, open, or lost. */
export class StateEvent extends Event {
  constructor(state, { code, reason, error, attempt, delay, url } = {}) {
    super("state");
    this.state = state;
    this.url = url;
    this.code = code;
    this.reason = reason ?? "";
    this.error = error;
    this.attempt = attempt;
    this.delay = delay;
  }
}

/** ClientErrorEvent ("error") reports an error that no caller can receive:
 * a subscriber or a handler of a notification that threw, a subscription
 * the hub refused after a reconnection, a malformed message from the hub.
 * Unless a listener calls preventDefault(), it is also logged with
 * console.error, as browsers do with uncaught errors. */
export class ClientErrorEvent extends Event {
  constructor(error, context) {
    super("error", { cancelable: true });
    this.error = error;
    this.context = context;
  }
}

/** bigNumbersSupported tells whether this runtime lets the client read
 * integers beyond 2^53 exactly (JSON.parse source text access). */
export const bigNumbersSupported = (() => {
  let ok = false;
  JSON.parse("1", (_k, v, context) => {
    ok = context?.source === "1";
    return v;
  });
  return ok;
})();

const defaults = {
  WebSocket: undefined,
  token: undefined,
  callTimeout: 30_000,
  connectTimeout: 10_000,
  pingInterval: 30_000,
  minBackoff: 100,
  maxBackoff: 10_000,
  maxAttempts: Infinity,
  failFast: false,
  bigNumbers: false,
  probe: true,
  trace: undefined,
};

const noTimer = 0;

// A token from a token function is replaced a quarter of its remaining
// life before its exp, at most this long before (ms); a failed refresh is
// tried again after half the time left, at least minRefreshRetry.
const maxRefreshMargin = 30_000;
const minRefreshRetry = 500;

// tokenExpiry reads the exp of a JSON Web Token (not verified: the hub
// does that), in ms since the epoch; undefined for another token.
function tokenExpiry(token) {
  const parts = typeof token === "string" ? token.split(".") : [];
  if (parts.length !== 3) return undefined;
  try {
    const b64 = parts[1].replace(/-/g, "+").replace(/_/g, "/");
    const exp = JSON.parse(atob(b64.padEnd(Math.ceil(b64.length / 4) * 4, "="))).exp;
    return typeof exp === "number" ? exp * 1000 : undefined;
  } catch {
    return undefined;
  }
}

// How many positions a handler shared by subscriptions remembers, so as to
// take an event replayed for each of them once.
const recentPositions = 10_000;

// How many events and presence changes a subscription holds while it
// waits for its rpc.subscribe answer; past that it drops them and reports
// a MissedEvent.
const maxHeld = 10_000;

// Set by the static blocks of Client and Subscription: how each reaches
// the other's private state.
let dropSubscription, endSubscription, positionOf, withdrawProvision;

/**
 * connect opens a Client and resolves to it once its first connection is
 * open. url is the hub's URL, or an array of the URLs of a cluster's nodes,
 * tried in turn. If no URL answers, the client is closed and connect
 * rejects with a ConnectionError saying why (for a refused handshake, the
 * hub's HTTP status, found by probing the hub; see options.probe). Later
 * losses of the connection are repaired in the background.
 */
export function connect(url, options) {
  const client = new Client(url, options);
  const failures = [];
  return new Promise((resolve, reject) => {
    const onState = (e) => {
      if (e.state === "open") {
        client.removeEventListener("state", onState);
        resolve(client);
        return;
      }
      if (e.state === "disconnected") failures.push(e);
      if (e.state === "closed" || failures.length >= client.urls.length) {
        client.removeEventListener("state", onState);
        client.close();
        reject(connectError(e.state === "closed" ? [...failures, e] : failures, client.url));
      }
    };
    client.addEventListener("state", onState);
  });
}

// connectError says why connect failed: each URL's reason when there are
// several.
function connectError(failures, url) {
  const last = failures[failures.length - 1];
  const init = { closeCode: last.code, closeReason: last.reason };
  const tried = failures.filter((f) => f.url !== undefined);
  if (tried.length <= 1) return last.error ?? new ConnectionError(`cannot connect to ${url}: ${describeClose(last.code, last.reason)}`, init);
  const each = tried.map((f) => `${f.url}: ${describeClose(f.code, f.reason)}`);
  return new ConnectionError(`cannot connect to any hub: ${each.join("; ")}`, { ...init, cause: last.error });
}

/**
 * Client is a connection to a hub that stays up: it dials at once, and
 * again with exponential backoff (with jitter) whenever the connection
 * drops, re-subscribes its topics before anything else is sent, and
 * reports each change as a "state" event: connecting, open, disconnected
 * (with the close code and reason), and closed, for good, last.
 *
 * Given an array of URLs, the nodes of a cluster, it tries them in turn
 * until one answers, and each attempt after a loss goes to the URL after
 * the last one tried: a client whose node died moves to another.
 */
export class Client extends EventTarget {
  #o;
  #WS;
  #urls; // the hub's URLs: one, or a cluster's nodes
  #at = 0; // index in #urls of the current or last connection
  #tried = 1; // URLs tried before the first connection opened; then Infinity
  #state = "connecting";
  #conn = null; // {ws, open}: the current socket
  #retries = 0; // reconnection attempts since the last open
  #retryTimer = noTimer;
  #pingTimer = noTimer;
  #tokenTimer = noTimer;
  #pingOut = false;
  #nextId = 1;
  #pending = new Map(); // id -> {resolve, reject, onProgress}
  #batches = new Set(); // batches in flight: {fail, raws}
  #raws = 0; // messages sent with sendRaw
  #waiting = new Set(); // calls waiting for the connection: {run, fail}
  #handlers = new Map(); // method -> handler
  #running = new Map(); // key of a hub request being served -> AbortController
  #patterns = new Map(); // pattern -> {subs: Map<Subscription, rec>, onHub, queue}
  #provided = new Map(); // provided method or pattern -> Provision
  #fns = new Map(); // handler of subscriptions -> {n: how many, seqs: recent positions it got}
  #reviver;
  #online = () => {
    if (this.#state === "disconnected" && this.#retryTimer !== noTimer) {
      clearTimeout(this.#retryTimer);
      this.#retryTimer = noTimer;
      this.#dial();
    }
  };

  constructor(url, options = {}) {
    super();
    this.#urls = [...new Set((Array.isArray(url) ? url : [url]).map(String))];
    if (this.#urls.length === 0) throw new TypeError("switchboard: want a hub URL, or an array of them");
    this.#o = { ...defaults };
    for (const [k, v] of Object.entries(options)) if (v !== undefined) this.#o[k] = v;
    this.#WS = this.#o.WebSocket ?? globalThis.WebSocket;
    if (typeof this.#WS !== "function") {
      throw new TypeError("switchboard: no WebSocket implementation; pass one in options.WebSocket (in Node.js 20: import { WebSocket } from \"ws\")");
    }
    if (this.#o.bigNumbers && bigNumbersSupported) this.#reviver = bigReviver;
    globalThis.addEventListener?.("online", this.#online);
    // Dial after the constructor returns, so that "state" listeners added
    // right after it see "connecting".
    queueMicrotask(() => this.#dial());
  }

  /** state is "connecting", "open", "disconnected" or "closed". */
  get state() {
    return this.#state;
  }

  /** url is the URL of the hub the client is connected to, or is dialing,
   * or was last connected to. */
  get url() {
    return this.#urls[this.#at];
  }

  /** urls lists the hub URLs the client was given, in the order it tries
   * them. */
  get urls() {
    return [...this.#urls];
  }

  /** subscriptions lists the active subscriptions. */
  get subscriptions() {
    const out = [];
    for (const entry of this.#patterns.values()) for (const s of entry.subs.keys()) if (s.active) out.push(s);
    return out;
  }

  /**
   * call calls method with params (an array, an object, or undefined) and
   * resolves to its result. It rejects with an RPCError when the hub
   * answers with an error; with a TimeoutError when options.timeout (default
   * options.callTimeout of the client) passes, or with the signal's reason
   * when options.signal aborts: both send rpc.cancel. options.onProgress
   * receives the data of the hub's rpc.progress notifications for the call.
   * While the client is disconnected the call waits for the connection,
   * bounded by its timeout, or rejects at once with a DisconnectedError
   * when options.failFast (default options.failFast of the client).
   */
  call(method, params, options = {}) {
    return this.#calls([{ method, params }], options, false).then((r) => r[0].value);
  }

  /**
   * notify sends a notification; no reply comes. It resolves once the
   * message is sent, after waiting for the connection as call does.
   */
  notify(method, params, options = {}) {
    return this.#calls([{ method, params, notification: true }], options, false).then(() => undefined);
  }

  /**
   * batch sends the requests as one JSON-RPC batch and resolves, once every
   * call in it is answered, to one entry per request, in order, shaped as
   * Promise.allSettled's: {status: "fulfilled", value} or {status:
   * "rejected", reason} with an RPCError. Notifications (notification:
   * true) get {status: "fulfilled", value: undefined}. The batch as a whole
   * rejects as call does: timeout, abort, connection lost, closed.
   */
  batch(requests, options = {}) {
    if (!Array.isArray(requests) || requests.length === 0) {
      return Promise.reject(new TypeError("batch: want a non-empty array of requests"));
    }
    return this.#calls(requests, options, true);
  }

  /** publish publishes data on topic (rpc.publish) and resolves to the
   * number of peers it reached. */
  async publish(topic, data, options) {
    const { delivered } = await this.call("rpc.publish", { topic, data }, options);
    return delivered;
  }

  /**
   * subscribe calls handler(event) for every event published on a topic
   * matching pattern ("chat.room1", "chat.*" for one word, "chat.>" for
   * one or more). It resolves to a Subscription once the hub has accepted
   * the pattern (an RPCError, -32001, when its policy refuses). An event
   * reaches each handler function once, however many of its subscriptions
   * match it. Events carry their position, seq and epoch.
   *
   * The subscription lasts across reconnections until unsubscribe() or
   * close(): after a reconnection it subscribes again from the position of
   * the last event it took, and the hub replays what was published
   * meanwhile, so that the handler sees every event once and in order. When
   * the hub no longer holds all of them (or has another epoch), the handler
   * first gets a MissedEvent ({missed: true, topic: pattern, epoch}),
   * before the events that follow.
   *
   * options.since ({epoch, seq}, a position an event or sub.position gave)
   * starts after that position instead of now, the same way.
   * options.onPresence(change) asks for the presence changes of the pattern
   * and receives them in order with the events: {join, topic, peer}. The
   * other options are call()'s, for the rpc.subscribe.
   */
  async subscribe(pattern, handler, options = {}) {
    if (typeof pattern !== "string" || pattern === "") throw new TypeError("subscribe: want a topic pattern");
    if (typeof handler !== "function") throw new TypeError("subscribe: want a handler function");
    if (this.#state === "closed") throw new ClosedError();
    const { since, onPresence, ...callOptions } = options;
    if (since !== undefined && (typeof since?.epoch !== "string" || !Number.isSafeInteger(since?.seq))) {
      throw new TypeError("subscribe: since wants {epoch, seq}, a position an event gave");
    }
    if (onPresence !== undefined && typeof onPresence !== "function") throw new TypeError("subscribe: onPresence wants a function");
    let entry = this.#patterns.get(pattern);
    if (!entry) {
      entry = { subs: new Map(), onHub: false, queue: Promise.resolve() };
      this.#patterns.set(pattern, entry);
    }
    const sub = new Subscription(this, pattern, handler);
    const rec = { sub, onPresence, known: false, head: 0, pos: since ? { epoch: since.epoch, seq: since.seq } : null, held: [] };
    entry.subs.set(sub, rec);
    let fn = this.#fns.get(handler);
    if (!fn) this.#fns.set(handler, (fn = { n: 0, epoch: undefined, seqs: new Set() }));
    fn.n++;
    rec.fn = fn;
    try {
      await this.#inOrder(entry, async () => {
        if (!sub.active || rec.known) return;
        // A subscription from now shares the rpc.subscribe of a started
        // one of its pattern: every event that comes after this moment
        // is after that one's position.
        const twin = since ? undefined : [...entry.subs.values()].find((r) => r !== rec && r.known && r.sub.active && (r.onPresence || !onPresence));
        if (entry.onHub && twin) {
          // What it held came after it was made: all its own.
          this.#start(rec, null, undefined);
          rec.pos ??= twin.pos && { ...twin.pos };
          return;
        }
        const params = { topic: pattern };
        if (since) params.since = { epoch: since.epoch, seq: since.seq };
        if (onPresence) params.presence = true;
        const res = await this.call("rpc.subscribe", params, callOptions);
        entry.onHub = true;
        this.#start(rec, res, since);
      });
    } catch (err) {
      this.#drop(sub);
      throw err;
    }
    if (!sub.active) throw new ClosedError("subscription ended before the hub accepted it");
    return sub;
  }

  /**
   * provide serves method (a name, or a pattern such as "billing.*" or
   * "billing.>") to the other peers of the hub: the hub forwards their
   * calls to this client (rpc.provide). handler is as register()'s:
   * handler(params, {signal, progress, id, method}), where method is the
   * name called. It resolves to a Provision once the hub has accepted (an
   * RPCError, -32001, when its policy refuses; -32602 for a malformed
   * name). The method is provided again after each reconnection, until
   * provision.withdraw() or close().
   */
  async provide(method, handler, options = {}) {
    if (typeof method !== "string" || method === "" || method.startsWith("rpc.")) {
      throw new TypeError(`provide: ${JSON.stringify(method)} cannot be provided (rpc.* is reserved)`);
    }
    if (typeof handler !== "function") throw new TypeError("provide: want a handler function");
    if (this.#state === "closed") throw new ClosedError();
    if (this.#provided.has(method)) throw new TypeError(`provide: ${method} is provided already`);
    const prov = new Provision(this, method, handler);
    // Registered before the hub is told, so that the first call it
    // forwards finds the handler.
    this.#provided.set(method, prov);
    try {
      await this.call("rpc.provide", { methods: [method] }, options);
    } catch (err) {
      if (this.#provided.get(method) === prov) this.#provided.delete(method);
      throw err;
    }
    return prov;
  }

  /**
   * history resolves to the recent events of a topic or pattern that the
   * hub holds (rpc.history): {epoch, seq, events}, the events oldest first,
   * each with its topic, data, seq and epoch. options.limit (the newest
   * that many; the hub's default when left out) and options.since (a
   * position: only the events after it) choose which.
   */
  async history(topic, options = {}) {
    const { limit, since, ...callOptions } = options;
    const params = { topic };
    if (limit !== undefined) params.limit = limit;
    if (since !== undefined) params.since = { epoch: since.epoch, seq: since.seq };
    const h = await this.call("rpc.history", params, callOptions);
    for (const ev of h.events ?? []) ev.epoch = h.epoch;
    return h;
  }

  /** presence resolves to the peers ({id, user}) that an event published
   * on topic would reach (rpc.presence). */
  async presence(topic, options) {
    const { peers } = await this.call("rpc.presence", { topic }, options);
    return peers;
  }

  /** whoami resolves to how the hub shows this client ({id, user, node}):
   * the id other peers address it by (rpc.whoami). */
  whoami(options) {
    return this.call("rpc.whoami", undefined, options);
  }

  /**
   * callPeer calls method on peers chosen by the caller, through the hub
   * (rpc.call). to is a peer id, or {peer: id}, {user: name} or {topic}.
   * For one peer it resolves to that peer's result, or rejects with its
   * RPCError (-32007 when no such peer is connected, -32006 when it left
   * before answering). For a user or a topic it resolves, once every peer
   * has answered or the timeout passed, to one entry per peer (this client
   * left out): {peer, result} or {peer, error}, the error an RPCError
   * (-32003 for a peer that did not answer in time). options are call's:
   * the timeout also bounds the call at the hub, a little before it passes
   * here; signal cancels it at the peers; onProgress gets the rpc.progress
   * data of one peer (the hub passes on none from a user's or a topic's).
   */
  async callPeer(to, method, params, options = {}) {
    const address = typeof to === "string" ? { peer: to } : { ...to };
    const given = ["peer", "user", "topic"].filter((k) => address[k] !== undefined);
    if (given.length !== 1) {
      throw new TypeError("callPeer: want a peer id, or one of {peer}, {user}, {topic}");
    }
    const p = { [given[0]]: address[given[0]], method };
    if (params !== undefined) p.params = params;
    const timeout = options.timeout ?? this.#o.callTimeout;
    if (timeout > 0 && timeout < Infinity) p.timeout = Math.max(1, Math.floor(timeout * 0.95));
    const res = await this.call("rpc.call", p, options);
    if (given[0] === "peer") return res;
    return res.results.map((r) =>
      r.error ? { peer: r.peer, error: new RPCError(r.error.code, r.error.message, r.error.data) } : r,
    );
  }

  /** callUser is callPeer({user}, ...): every peer of one identity. */
  callUser(user, method, params, options) {
    return this.callPeer({ user }, method, params, options);
  }

  /** callTopic is callPeer({topic}, ...): every peer an event on topic
   * would reach. */
  callTopic(topic, method, params, options) {
    return this.callPeer({ topic }, method, params, options);
  }

  /**
   * register serves method for the hub (and, through it, other peers):
   * handler(params, {signal, progress, id, method}) returns the result, or
   * a Promise of it. Throwing an RPCError chooses the code, message and
   * data of the error answer; any other error answers -32000 with its
   * message. signal aborts when the caller cancels (rpc.cancel) or the
   * connection drops; progress(data) sends rpc.progress to the caller.
   * It returns a function that unregisters the method.
   */
  register(method, handler) {
    if (typeof method !== "string" || method === "" || method.startsWith("rpc.")) {
      throw new TypeError(`register: ${JSON.stringify(method)} is not a method name of one's own (rpc.* is reserved)`);
    }
    if (typeof handler !== "function") throw new TypeError("register: want a handler function");
    this.#handlers.set(method, handler);
    return () => {
      if (this.#handlers.get(method) === handler) this.#handlers.delete(method);
    };
  }

  /**
   * sendRaw sends text as one WebSocket message, as it is, even if it is
   * not JSON: for tools that show the protocol, like the playground. Replies
   * to ids the client did not send itself are not delivered anywhere but
   * to options.trace. It throws a DisconnectedError unless the client is open.
   */
  sendRaw(text) {
    if (this.#state !== "open") throw new DisconnectedError();
    this.#raws++;
    this.#write(this.#conn, String(text));
  }

  /**
   * close closes the connection (code 1000 unless given) and stops
   * reconnecting. Calls waiting or in flight reject with a ClosedError,
   * subscriptions end, and a "state" event reports "closed".
   */
  close(code = 1000, reason = "") {
    this.#shutdown(undefined, code, reason);
  }

  // ---- connection lifecycle ----

  #setState(state, detail) {
    if (this.#state === "closed") return;
    this.#state = state;
    this.dispatchEvent(new StateEvent(state, detail));
  }

  async #dial() {
    if (this.#state === "closed") return;
    this.#retryTimer = noTimer;
    const attempt = this.#retries;
    this.#setState("connecting", { attempt, url: this.url });
    let token = this.#o.token;
    try {
      if (typeof token === "function") token = await token();
    } catch (err) {
      return this.#failed(null, 1006, "", err);
    }
    if (this.#state !== "connecting") return; // closed meanwhile
    let ws;
    try {
      ws = token ? new this.#WS(this.url, ["switchboard", "switchboard.bearer." + base64url(token)]) : new this.#WS(this.url);
    } catch (err) {
      return this.#shutdown(err); // a malformed URL will not get better
    }
    const conn = { ws, open: false, token };
    this.#conn = conn;
    ws.binaryType = "arraybuffer";
    const timer = setTimeout(() => this.#lost(conn, 4000, "connect timeout"), this.#o.connectTimeout);
    ws.addEventListener("open", () => {
      clearTimeout(timer);
      this.#opened(conn);
    });
    ws.addEventListener("message", (e) => this.#receive(conn, e.data));
    ws.addEventListener("close", (e) => {
      clearTimeout(timer);
      this.#lost(conn, e.code, e.reason);
    });
    ws.addEventListener("error", () => {}); // a close event follows
  }

  async #opened(conn) {
    if (conn !== this.#conn) return;
    conn.open = true;
    // Subscribe and provide again before anything else goes through:
    // each pattern from the earliest position of its subscriptions.
    const resubs = [];
    for (const [topic, entry] of this.#patterns) {
      const recs = [...entry.subs.values()].filter((r) => r.sub.active);
      if (recs.length === 0) continue;
      const params = { topic };
      for (const r of recs) {
        if (r.onPresence) params.presence = true;
        if (!r.pos?.epoch) continue;
        if (!params.since) params.since = { ...r.pos };
        else if (r.pos.epoch === params.since.epoch && r.pos.seq < params.since.seq) params.since.seq = r.pos.seq;
      }
      resubs.push({ entry, recs, params });
    }
    const requests = resubs.map((r) => ({ method: "rpc.subscribe", params: r.params }));
    if (this.#provided.size > 0) requests.push({ method: "rpc.provide", params: { methods: [...this.#provided.keys()] } });
    if (requests.length > 0) {
      let results;
      try {
        results = await this.#calls(requests, { timeout: this.#o.connectTimeout, conn }, true);
      } catch (err) {
        if (conn === this.#conn) this.#lost(conn, 4000, "re-subscribing failed", err);
        return;
      }
      if (conn !== this.#conn) return;
      results.forEach((r, i) => {
        const rs = resubs[i];
        if (!rs) {
          if (r.status !== "fulfilled") this.#report(r.reason, "providing again");
          return;
        }
        if (r.status === "fulfilled") {
          rs.entry.onHub = true;
          for (const rec of rs.recs) this.#start(rec, r.value, rec.pos?.epoch ? rec.pos : undefined);
        } else {
          this.#report(r.reason, `re-subscribing to ${rs.params.topic}`);
        }
      });
    }
    if (conn !== this.#conn) return;
    this.#retries = 0;
    this.#tried = Infinity;
    this.#pingOut = false;
    if (this.#o.pingInterval > 0) this.#pingTimer = setInterval(() => this.#ping(conn), this.#o.pingInterval);
    this.#armRefresh(conn);
    this.#setState("open", { url: this.url });
    if (conn !== this.#conn) return;
    const waiting = [...this.#waiting];
    this.#waiting.clear();
    for (const w of waiting) w.run();
  }

  // ping sends rpc.ping each interval; one still unanswered at the next
  // tick means the connection is dead without anyone having said so (a
  // laptop that slept, a NAT that forgot): drop it and reconnect.
  #ping(conn) {
    if (conn !== this.#conn) return;
    if (this.#pingOut) {
      this.#lost(conn, 4000, `no answer to rpc.ping within ${this.#o.pingInterval} ms`);
      return;
    }
    this.#pingOut = true;
    const id = this.#nextId++;
    this.#pending.set(id, {
      resolve: () => {
        this.#pingOut = false;
      },
      reject: () => {},
    });
    this.#write(conn, `{"jsonrpc":"2.0","method":"rpc.ping","id":${id}}`);
  }

  // lost handles the end of conn: its close event, a timeout, a dead ping.
  #lost(conn, code, reason, cause) {
    if (conn !== this.#conn) return;
    this.#conn = null;
    clearInterval(this.#pingTimer);
    this.#pingTimer = noTimer;
    clearTimeout(this.#tokenTimer);
    this.#tokenTimer = noTimer;
    try {
      conn.ws.close(code >= 3000 && code <= 4999 ? code : 1000, reason);
    } catch {
      // already closed
    }
    const err = new ConnectionLostError(`connection lost: ${describeClose(code, reason)}`, { closeCode: code, closeReason: reason, cause });
    this.#failInFlight(err);
    for (const entry of this.#patterns.values()) {
      entry.onHub = false;
      for (const rec of entry.subs.values()) {
        rec.known = false;
        rec.held = [];
        rec.overflow = false;
      }
    }
    this.#failed(conn, code, reason, cause);
  }

  async #failed(conn, code, reason, cause) {
    if (this.#state === "closed") return;
    if (conn && !conn.open && this.#o.probe && !reason) {
      reason = await this.#probe(conn.token);
      if (this.#state === "closed") return;
    }
    const error = new ConnectionError(`${conn?.open ? "connection lost" : "cannot connect"}: ${describeClose(code, reason)}`, {
      closeCode: code,
      closeReason: reason,
      cause,
    });
    if (this.#retries >= this.#o.maxAttempts) {
      const msg = this.#o.maxAttempts > 0 ? `gave up after ${this.#retries} attempts` : "connection ended";
      return this.#shutdown(new ClosedError(`${msg}: ${describeClose(code, reason)}`, { closeCode: code, closeReason: reason, cause }));
    }
    // The next attempt goes to the next URL: one that just failed or went
    // away is the last to be tried again. Before the first connection, the
    // URLs not yet tried are tried at once; later attempts wait the backoff.
    const url = this.url;
    this.#at = (this.#at + 1) % this.#urls.length;
    let delay = 0;
    if (this.#tried < this.#urls.length) {
      this.#tried++;
    } else {
      const nominal = Math.min(this.#o.maxBackoff, this.#o.minBackoff * 2 ** this.#retries);
      delay = Math.round(nominal / 2 + Math.random() * (nominal / 2));
    }
    this.#retries++;
    this.#setState("disconnected", { code, reason, error, attempt: this.#retries, delay, url });
    if (this.#state !== "disconnected") return; // closed by a listener
    this.#retryTimer = setTimeout(() => this.#dial(), delay);
  }

  // probe finds out why a WebSocket handshake failed, which browsers do not
  // tell (the close code is 1006 whatever happened): it POSTs rpc.ping to
  // the same URL and reads the HTTP status.
  async #probe(token) {
    if (typeof fetch !== "function") return "";
    const url = this.url.replace(/^ws/, "http");
    const headers = { "Content-Type": "application/json" };
    if (token) headers.Authorization = "Bearer " + token;
    try {
      const resp = await fetch(url, {
        method: "POST",
        headers,
        body: '{"jsonrpc":"2.0","method":"rpc.ping","id":0}',
        signal: AbortSignal.timeout(Math.min(this.#o.connectTimeout, 5000)),
      });
      const body = (await resp.text()).trim();
      if (resp.ok) return "the hub answers HTTP but refused the WebSocket";
      const detail = body.startsWith("{") ? "" : body.split("\n")[0];
      const hint = resp.status === 401 ? (token ? " (the token was not accepted)" : " (the hub needs a token)") : "";
      return `HTTP ${resp.status}${resp.statusText ? " " + resp.statusText : ""}${detail ? ": " + detail : ""}${hint}`;
    } catch {
      return "the hub cannot be reached";
    }
  }

  // ---- tokens that expire (PROTOCOL.md section 9) ----

  // armRefresh schedules the replacement of conn's token when the token
  // option is a function and the token a JWT with an exp: a quarter of its
  // remaining life before exp (at most 30 s before), or after delay.
  #armRefresh(conn, delay) {
    clearTimeout(this.#tokenTimer);
    this.#tokenTimer = noTimer;
    if (typeof this.#o.token !== "function") return;
    const exp = tokenExpiry(conn.token);
    if (exp === undefined) return;
    if (delay === undefined) {
      const left = exp - Date.now();
      delay = left - Math.min(left / 4, maxRefreshMargin);
    }
    this.#tokenTimer = setTimeout(() => this.#refresh(conn), Math.max(0, delay));
  }

  // refresh gets a fresh token and sends it with rpc.auth. A failure is
  // reported as an "error" event (context "refreshing the token") and
  // tried again while the old token holds; when it expires, the hub
  // closes the connection (4001) and the client reconnects with a new one.
  async #refresh(conn) {
    this.#tokenTimer = noTimer;
    if (conn !== this.#conn) return;
    try {
      const token = await this.#o.token();
      if (conn !== this.#conn) return;
      await this.call("rpc.auth", { token });
      conn.token = token;
      if (conn === this.#conn) this.#armRefresh(conn);
    } catch (err) {
      if (conn !== this.#conn) return;
      this.#report(new Error(`token refresh failed: ${err?.message ?? err}`, { cause: err }), "refreshing the token");
      const left = (tokenExpiry(conn.token) ?? 0) - Date.now();
      if (left > 0 && conn === this.#conn) this.#armRefresh(conn, Math.max(left / 2, minRefreshRetry));
    }
  }

  #failInFlight(err) {
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    this.#batches.clear();
    for (const p of pending) p.reject(err);
    const running = [...this.#running.values()];
    this.#running.clear();
    for (const ctl of running) ctl.abort(err);
  }

  #shutdown(cause, code = 1000, reason = "") {
    if (this.#state === "closed") return;
    this.#state = "closed";
    clearTimeout(this.#retryTimer);
    clearInterval(this.#pingTimer);
    clearTimeout(this.#tokenTimer);
    globalThis.removeEventListener?.("online", this.#online);
    const conn = this.#conn;
    this.#conn = null;
    const err = cause instanceof ClosedError ? cause : new ClosedError(cause ? `client closed: ${cause.message}` : undefined, { cause });
    this.#failInFlight(err);
    const waiting = [...this.#waiting];
    this.#waiting.clear();
    for (const w of waiting) w.fail(err);
    for (const entry of this.#patterns.values()) for (const s of entry.subs.keys()) endSubscription(s);
    this.#patterns.clear();
    this.#provided.clear();
    this.#fns.clear();
    try {
      conn?.ws.close(code, reason);
    } catch {
      conn?.ws.close();
    }
    this.dispatchEvent(new StateEvent("closed", { code, reason, error: cause }));
  }

  // ---- outgoing ----

  #write(conn, text) {
    this.#trace("send", text);
    conn.ws.send(text);
  }

  // trace shows a message to options.trace. What the trace throws is
  // reported, never lets a message be lost.
  #trace(direction, text) {
    try {
      this.#o.trace?.(direction, text);
    } catch (err) {
      this.#report(err, "trace");
    }
  }

  // calls sends requests (one, or a batch) once the connection is open
  // (options.conn: on that socket, before the client reports "open").
  #calls(requests, options, isBatch) {
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
        const conn = this.#conn;
        finish(false, err);
        if (conn?.open) for (const id of unanswered) this.#write(conn, `{"jsonrpc":"2.0","method":"rpc.cancel","params":{"id":${id}}}`);
      };
      const onAbort = () => stop(signal.reason);
      signal?.addEventListener("abort", onAbort, { once: true });
      if (timeout > 0 && timeout < Infinity) timer = setTimeout(() => stop(new TimeoutError(label, timeout)), timeout);

      const run = () => {
        const conn = direct ?? this.#conn;
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
        this.#write(conn, text);
        if (open === 0) finish(true, results);
      };
      const settle = (i, r) => {
        results[i] = r;
        if (--open === 0) finish(true, results);
      };
      const fail = (err) => finish(false, err);

      if (direct || this.#state === "open") return run();
      if (this.#state === "closed") return fail(new ClosedError());
      if (failFast) return fail(new DisconnectedError());
      waiter = { run, fail };
      this.#waiting.add(waiter);
    });
  }

  // ---- incoming ----

  #receive(conn, data) {
    if (conn !== this.#conn) return;
    const text = typeof data === "string" ? data : new TextDecoder().decode(data);
    this.#trace("receive", text);
    let msg;
    try {
      msg = JSON.parse(text, this.#reviver);
    } catch (err) {
      this.#report(new Error(`the hub sent a message that is not JSON: ${err.message}`), "receiving");
      return;
    }
    const batch = Array.isArray(msg);
    const elems = batch ? msg : [msg];
    let rawIds;
    // Number ids of requests are echoed as they were written: JSON.parse
    // may have rounded them.
    if (elems.some((m) => m && typeof m.method === "string" && (typeof m.id === "number" || typeof m.id === "bigint"))) {
      rawIds = numberIdSources(text, batch);
    }
    const replies = elems.map((m, i) => this.#dispatch(conn, m, rawIds?.[i]));
    if (replies.every((r) => r === undefined)) return;
    Promise.all(replies).then((rs) => {
      rs = rs.filter((r) => r !== undefined);
      if (rs.length === 0 || conn !== this.#conn) return;
      this.#write(conn, batch ? `[${rs.join(",")}]` : rs[0]);
    });
  }

  // dispatch handles one message; for a request that gets an answer, it
  // returns a Promise of the encoded response.
  #dispatch(conn, m, rawId) {
    if (m === null || typeof m !== "object" || Array.isArray(m)) {
      return Promise.resolve(response(null, { error: { code: -32600, message: "Invalid Request" } }));
    }
    if (typeof m.method !== "string") {
      if ("result" in m || "error" in m) this.#answer(m);
      else return Promise.resolve(response(null, { error: { code: -32600, message: "Invalid Request" } }));
      return undefined;
    }
    const isCall = "id" in m;
    const id = rawId !== undefined ? { raw: rawId } : m.id;
    const p = m.params;
    switch (m.method) {
      case "rpc.event":
        if (p && typeof p.topic === "string") this.#deliver(p);
        return undefined;
      case "rpc.join":
      case "rpc.leave":
        if (p && typeof p.topic === "string") this.#presenceChange(m.method === "rpc.join", p);
        return isCall ? Promise.resolve(response(id, { result: null })) : undefined;
      case "rpc.progress":
        this.#progress(p);
        return undefined;
      case "rpc.cancel":
        this.#running.get(runKey(p?.id))?.abort(new RPCError(ErrorCode.Cancelled, "Request cancelled"));
        return undefined;
      case "rpc.ping":
        return isCall ? Promise.resolve(response(id, { result: {} })) : undefined;
      case "rpc.discover":
        return isCall ? Promise.resolve(response(id, { result: this.#describe() })) : undefined;
    }
    return this.#serve(conn, m, id, isCall);
  }

  async #serve(conn, m, id, isCall) {
    if (m.params !== undefined && (m.params === null || typeof m.params !== "object")) {
      return isCall ? response(id, { error: { code: -32600, message: "Invalid Request" } }) : undefined;
    }
    const handler = this.#handlers.get(m.method) ?? this.#providerOf(m.method);
    if (!handler) {
      return isCall ? response(id, { error: { code: ErrorCode.MethodNotFound, message: "Method not found" } }) : undefined;
    }
    const ctl = new AbortController();
    const key = runKey(m.id);
    if (isCall) this.#running.set(key, ctl);
    const progress = (data) => {
      if (!isCall || ctl.signal.aborted || conn !== this.#conn) return;
      this.#write(conn, `{"jsonrpc":"2.0","method":"rpc.progress","params":{"id":${encodeId(id)},"data":${encode(data ?? null)}}}`);
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

  #answer(m) {
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

  #progress(p) {
    const onProgress = this.#pending.get(p?.id)?.onProgress;
    if (!onProgress) return;
    try {
      onProgress(p.data);
    } catch (err) {
      this.#report(err, "onProgress");
    }
  }

  // providerOf finds the handler of a provided method: by name, else the
  // first pattern (in sorted order) that matches.
  #providerOf(method) {
    if (this.#provided.size === 0 || method.startsWith("rpc.")) return undefined;
    const exact = this.#provided.get(method);
    if (exact) return exact.handler;
    const patterns = [...this.#provided.keys()].filter((k) => /(^|\.)[*>](\.|$)/.test(k)).sort();
    for (const k of patterns) if (matches(k, method)) return this.#provided.get(k).handler;
    return undefined;
  }

  // How a subscription's events stay in order and free of duplicates,
  // across its start and reconnections, with subscriptions to
  // overlapping patterns on one connection: until its rpc.subscribe
  // answer is in, a subscription holds the events that match it. The
  // answer gives head, the stream's position when the hub registered it:
  // live events after head are its own, and the hub replays the events
  // after since up to head marked with the pattern they are replayed for
  // ("replay"). So a subscription takes a replayed event of its own
  // pattern, or a live one after head, when it is after the last it took;
  // events without a position (a hub that gives none) as they come.
  #deliver(event) {
    const seen = new Set();
    for (const [pattern, entry] of this.#patterns) {
      if (event.replay !== undefined ? event.replay !== pattern : !matches(pattern, event.topic)) continue;
      for (const rec of entry.subs.values()) {
        if (!rec.sub.active) continue;
        if (!rec.known) this.#hold(rec, { event });
        else this.#offer(rec, event, seen);
      }
    }
  }

  #hold(rec, item) {
    if (rec.held.length < maxHeld) rec.held.push(item);
    else rec.overflow = true;
  }

  #offer(rec, event, seen) {
    const seq = event.seq;
    if (typeof seq === "number" && seq > 0) {
      if (seq <= (rec.pos?.seq ?? 0) || (event.replay === undefined && seq <= rec.head)) return;
      rec.pos = { epoch: event.epoch, seq };
    }
    // A handler of several subscriptions gets an event once. Replays are
    // per pattern, so one event may come once for each: a handler shared
    // by subscriptions remembers the positions it got lately.
    const fn = rec.fn;
    if (typeof seq === "number" && seq > 0 && fn.n > 1) {
      if (fn.epoch !== event.epoch) {
        fn.epoch = event.epoch;
        fn.seqs.clear();
      }
      if (fn.seqs.has(seq)) return;
      fn.seqs.add(seq);
      if (fn.seqs.size > recentPositions) fn.seqs.delete(fn.seqs.values().next().value);
    } else {
      if (seen?.has(rec.sub.handler)) return;
      seen?.add(rec.sub.handler);
    }
    this.#call(rec, event);
  }

  #call(rec, event) {
    const s = rec.sub;
    try {
      const r = s.handler(event);
      if (typeof r?.then === "function") r.then(undefined, (err) => this.#report(err, `subscriber of ${s.topic}`));
    } catch (err) {
      this.#report(err, `subscriber of ${s.topic}`);
    }
  }

  // start takes in the answer to the rpc.subscribe of rec made with since
  // (undefined: from now), then the events held meanwhile.
  #start(rec, res, since) {
    if (rec.known || !rec.sub.active) return;
    rec.known = true;
    // res null: started by a twin's answer, positions from its events.
    const epoch = typeof res?.epoch === "string" ? res.epoch : undefined;
    rec.head = Number.isSafeInteger(res?.seq) ? res.seq : 0;
    let missed = rec.overflow; // it held too much, and dropped some
    rec.overflow = false;
    if (epoch === undefined) {
      rec.pos = null; // a hub that gives no positions
    } else if (!since) {
      rec.pos = { epoch, seq: rec.head };
    } else if (since.epoch !== epoch) {
      rec.pos = { epoch, seq: 0 };
      missed = true;
    } else if (res.recovered !== true) {
      missed = true;
    }
    if (missed) this.#call(rec, new MissedEvent(rec.sub.topic, epoch, since ?? rec.pos ?? undefined));
    const held = rec.held;
    rec.held = [];
    for (const h of held) {
      if (!rec.sub.active) return;
      if (h.event) this.#offer(rec, h.event);
      else this.#notifyPresence(rec, h.change);
    }
  }

  #presenceChange(join, p) {
    const change = { join, topic: p.topic, peer: p.peer };
    const entry = this.#patterns.get(p.topic);
    if (!entry) return;
    for (const rec of entry.subs.values()) {
      if (!rec.sub.active || !rec.onPresence) continue;
      if (!rec.known) this.#hold(rec, { change });
      else this.#notifyPresence(rec, change);
    }
  }

  #notifyPresence(rec, change) {
    if (!rec.onPresence) return;
    try {
      const r = rec.onPresence(change);
      if (typeof r?.then === "function") r.then(undefined, (err) => this.#report(err, `presence of ${rec.sub.topic}`));
    } catch (err) {
      this.#report(err, `presence of ${rec.sub.topic}`);
    }
  }

  #describe() {
    const named = [...this.#provided.keys()].filter((k) => !/(^|\.)[*>](\.|$)/.test(k));
    const methods = [...new Set([...this.#handlers.keys(), ...named])].sort().map((name) => ({
      name,
      paramStructure: "either",
      params: [{ name: "params", schema: {} }],
      result: { name: "result", schema: {} },
    }));
    return { openrpc: "1.3.2", info: { title: "switchboard.js", version: "0.0.0" }, methods };
  }

  #report(error, context) {
    const ev = new ClientErrorEvent(error, context);
    this.dispatchEvent(ev);
    if (!ev.defaultPrevented) console.error(`switchboard: ${context}:`, error);
  }

  // ---- subscriptions ----

  // inOrder runs fn after the operations queued before it on entry, so
  // that an rpc.subscribe and an rpc.unsubscribe of one pattern reach the
  // hub in the order they were asked for.
  #inOrder(entry, fn) {
    const run = entry.queue.then(fn);
    entry.queue = run.catch(() => {});
    return run;
  }

  // drop ends sub and, when it was the last of its pattern, unsubscribes
  // the pattern on the hub.
  #drop(sub) {
    const entry = this.#patterns.get(sub.topic);
    endSubscription(sub);
    const rec = entry?.subs.get(sub);
    if (rec && --rec.fn.n === 0) this.#fns.delete(sub.handler);
    if (!entry || !entry.subs.delete(sub) || entry.subs.size > 0) return Promise.resolve();
    return this.#inOrder(entry, async () => {
      if (entry.subs.size > 0) return; // subscribed again meanwhile
      if (this.#patterns.get(sub.topic) === entry) this.#patterns.delete(sub.topic);
      if (!entry.onHub) return;
      entry.onHub = false;
      try {
        await this.call("rpc.unsubscribe", { topic: sub.topic }, { failFast: true });
      } catch (err) {
        // The hub forgets a connection's subscriptions with it.
        if (!(err instanceof ConnectionError)) throw err;
      }
    });
  }

  // withdraw takes back a provision: rpc.unprovide, then its handler
  // stops serving.
  async #withdraw(prov) {
    if (this.#provided.get(prov.method) !== prov) return;
    try {
      await this.call("rpc.unprovide", { methods: [prov.method] }, { failFast: true });
    } catch (err) {
      // The hub forgets what a connection provided with it.
      if (!(err instanceof ConnectionError)) throw err;
    } finally {
      if (this.#provided.get(prov.method) === prov) this.#provided.delete(prov.method);
    }
  }

  #position(sub) {
    const rec = this.#patterns.get(sub.topic)?.subs.get(sub);
    return rec?.pos?.epoch ? { epoch: rec.pos.epoch, seq: rec.pos.seq } : undefined;
  }

  static {
    // Subscription and Provision reach the client's state through these.
    dropSubscription = (client, sub) => client.#drop(sub);
    positionOf = (client, sub) => client.#position(sub);
    withdrawProvision = (client, prov) => client.#withdraw(prov);
  }
}

/** Subscription is one handler subscribed to a topic pattern. */
export class Subscription {
  #client;
  #active = true;

  constructor(client, topic, handler) {
    this.#client = client;
    this.topic = topic;
    this.handler = handler;
  }

  /** active is true until unsubscribe, or the client's close. */
  get active() {
    return this.#active;
  }

  /**
   * position is where the subscription is in the hub's stream, {epoch,
   * seq}: the last event it took, or before any, where it started. Save it
   * to resume in another run of the page (subscribe's options.since).
   * Undefined until the hub has answered, and with a hub that gives no
   * positions.
   */
  get position() {
    return this.#active ? positionOf(this.#client, this) : undefined;
  }

  /**
   * unsubscribe stops the deliveries at once and, unless another
   * subscription of the client has the same pattern, tells the hub
   * (rpc.unsubscribe) and resolves once it has answered.
   */
  unsubscribe() {
    if (!this.#active) return Promise.resolve();
    return dropSubscription(this.#client, this);
  }

  static {
    endSubscription = (s) => {
      s.#active = false;
    };
  }
}

/** Provision is a method, or a pattern of methods, that the client
 * provides to the other peers of the hub (Client.provide). */
export class Provision {
  #client;

  constructor(client, method, handler) {
    this.#client = client;
    this.method = method;
    this.handler = handler;
  }

  /** withdraw tells the hub to stop forwarding the method's calls
   * (rpc.unprovide) and resolves once it has answered; then the handler
   * stops serving. While the client is disconnected there is nothing to
   * tell: the method is simply not provided again. */
  withdraw() {
    return withdrawProvision(this.#client, this);
  }
}

/** MissedEvent is what a subscription's handler gets, in place of an
 * event, when resuming found the hub no longer holding every event
 * published since the subscription's position, or holding another epoch
 * (a hub that restarted): what the page built from the events is stale.
 * The events the hub still held follow it. */
export class MissedEvent {
  constructor(topic, epoch, since) {
    this.missed = true;
    this.topic = topic;
    this.epoch = epoch;
    this.since = since;
  }
}

/** matches reports whether topic matches a subscription pattern, where "*"
 * stands for one word and a final ">" for one or more. */
export function matches(pattern, topic) {
  const p = pattern.split("."),
    t = topic.split(".");
  for (let i = 0; i < p.length; i++) {
    if (p[i] === ">") return t.length > i;
    if (i >= t.length || (p[i] !== "*" && p[i] !== t[i])) return false;
  }
  return p.length === t.length;
}

// ---- encoding ----

function checkRequest(r) {
  if (r === null || typeof r !== "object" || typeof r.method !== "string" || r.method === "") {
    return new TypeError("want a method name");
  }
  const p = r.params;
  if (p !== undefined && (p === null || typeof p !== "object")) {
    return new TypeError(`${r.method}: params must be an array, an object or undefined, not ${p === null ? "null" : typeof p}`);
  }
  return undefined;
}

// encode is JSON.stringify that writes BigInt values as JSON numbers.
function encode(v) {
  try {
    return JSON.stringify(v);
  } catch (err) {
    if (!(err instanceof TypeError) || !/BigInt/i.test(err.message)) throw err;
  }
  if (typeof JSON.rawJSON === "function") {
    return JSON.stringify(v, (_k, x) => (typeof x === "bigint" ? JSON.rawJSON(x.toString()) : x));
  }
  const mark = "\u0000bigint:";
  return JSON.stringify(v, (_k, x) => (typeof x === "bigint" ? mark + x.toString() : x)).replace(/"\\u0000bigint:(-?\d+)"/g, "$1");
}

function encodeId(id) {
  return id !== null && typeof id === "object" ? id.raw : encode(id);
}

// response encodes a response to a request with id ({raw} for a number id
// kept as it was written). A result or error data that JSON cannot carry
// (a cycle, a function) becomes an internal error.
function response(id, body) {
  let rest;
  try {
    rest = "error" in body ? `"error":${encode(body.error)}` : `"result":${encode(body.result)}`;
  } catch (err) {
    rest = `"error":${encode({ code: ErrorCode.InternalError, message: `Internal error: the answer cannot be sent as JSON: ${err.message}` })}`;
  }
  return `{"jsonrpc":"2.0",${rest},"id":${encodeId(id)}}`;
}

function wireError(err, aborted) {
  if (err instanceof RPCError && Number.isInteger(err.code)) {
    const e = { code: err.code, message: String(err.message) };
    if (err.data !== undefined) e.data = err.data;
    return e;
  }
  if (aborted) return { code: ErrorCode.Cancelled, message: "Request cancelled" };
  return { code: ErrorCode.Application, message: String(err?.message ?? err) };
}

// runKey identifies a request being served, for rpc.cancel.
function runKey(id) {
  return typeof id === "number" || typeof id === "bigint" ? "n" + id : JSON.stringify(id);
}

function bigReviver(_key, value, context) {
  if (typeof value === "number" && !Number.isSafeInteger(value) && /^-?\d+$/.test(context?.source ?? "")) {
    return BigInt(context.source);
  }
  return value;
}

// numberIdSources returns the source text of the number "id" member of
// the message (batch false) or of each element of the batch, by index.
function numberIdSources(text, batch) {
  const out = [];
  const level = batch ? 2 : 1;
  let depth = 0;
  let index = -1;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "{" || c === "[") {
      depth++;
      if (depth === level && c === "{") index++;
    } else if (c === "}" || c === "]") {
      depth--;
    } else if (c === '"') {
      const start = i;
      for (i++; i < text.length && text[i] !== '"'; i++) if (text[i] === "\\") i++;
      if (depth !== level || text.slice(start, i + 1) !== '"id"') continue;
      const m = /^\s*:\s*(-?[0-9][0-9.eE+-]*)/.exec(text.slice(i + 1, i + 1024));
      if (m) out[batch ? index : 0] = m[1];
    }
  }
  return out;
}

function base64url(s) {
  let bin = "";
  for (const b of new TextEncoder().encode(s)) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function describeClose(code, reason) {
  const names = {
    1000: "closed normally",
    1001: "the hub is going away",
    1006: "closed abnormally",
    1008: "policy violation",
    1009: "message too big",
    1011: "the hub had an internal error",
  };
  const what = reason || names[code] || "closed";
  return code ? `${what} (${code})` : what;
}
