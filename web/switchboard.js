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
//
// This module is the one a page imports: it has connect and Client, and
// exports the rest from the modules it is made of, each of one concern:
//
//   switchboard-errors.js      the errors and the events
//   switchboard-connection.js  the socket's life: dial, open, lose, back off, close
//   switchboard-calls.js       the calls of the hub, each sent, answered, forgotten one way
//   switchboard-topics.js      subscriptions: their positions and resume rules
//   switchboard-provide.js     the methods provided to other peers
//   switchboard-serve.js       serving the hub's calls of registered and provided methods
//   switchboard-json.js        the wire's JSON: big numbers, ids kept as written
//
// Client owns one of each part and wires them together; a part knows only
// what it is given.

import { addressParams, peerAnswers } from "./switchboard-address.js";
import { ClientErrorEvent, ClosedError, ConnectionError, DisconnectedError, RPCError, RevokedEvent, connectError } from "./switchboard-errors.js";
import { bigNumbersSupported, bigReviver, numberIdSources, response } from "./switchboard-json.js";
import { Calls } from "./switchboard-calls.js";
import { Connection } from "./switchboard-connection.js";
import { Handlers } from "./switchboard-serve.js";
import { Provided } from "./switchboard-provide.js";
import { Topics } from "./switchboard-topics.js";

export {
  ErrorCode,
  RPCError,
  ConnectionError,
  DisconnectedError,
  ConnectionLostError,
  ClosedError,
  TimeoutError,
  RevokedError,
  StateEvent,
  ClientErrorEvent,
  RevokedEvent,
} from "./switchboard-errors.js";
export { bigNumbersSupported } from "./switchboard-json.js";
export { Subscription, MissedEvent, matches, userWord } from "./switchboard-topics.js";
export { Provision } from "./switchboard-provide.js";

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
  #o; // the options, with the defaults
  #link; // the socket and its life: a Connection
  #calls; // the calls of the hub
  #topics; // the subscriptions
  #provided; // the methods provided to other peers
  #handlers; // the methods served: registered and provided
  #reviver;

  constructor(url, options = {}) {
    super();
    const urls = [...new Set((Array.isArray(url) ? url : [url]).map(String))];
    if (urls.length === 0) throw new TypeError("switchboard: want a hub URL, or an array of them");
    this.#o = { ...defaults };
    for (const [k, v] of Object.entries(options)) if (v !== undefined) this.#o[k] = v;
    const WS = this.#o.WebSocket ?? globalThis.WebSocket;
    if (typeof WS !== "function") {
      throw new TypeError("switchboard: no WebSocket implementation; pass one in options.WebSocket (in Node.js 20: import { WebSocket } from \"ws\")");
    }
    if (this.#o.bigNumbers && bigNumbersSupported) this.#reviver = bigReviver;
    const report = (err, context) => this.#report(err, context);
    const call = (method, params, options) => this.call(method, params, options);
    this.#link = new Connection(urls, this.#o, WS, {
      emit: (event) => this.dispatchEvent(event),
      report,
      receive: (conn, text) => this.#receive(conn, text),
      resume: (conn) => this.#resume(conn),
      opened: () => this.#calls.ready(),
      lost: (err) => {
        this.#calls.lost(err);
        this.#handlers.abort(err);
        this.#topics.lost();
      },
      closed: (err) => {
        this.#calls.lost(err);
        this.#handlers.abort(err);
        this.#calls.closed(err);
        this.#topics.close();
        this.#provided.clear();
      },
      ping: (conn, onPong) => this.#calls.ping(conn, onPong),
      auth: (token) => this.call("rpc.auth", { token }),
    });
    this.#calls = new Calls(this.#link, this.#o, report);
    this.#topics = new Topics(call, report);
    this.#provided = new Provided(call);
    this.#handlers = new Handlers(this.#provided, report);
  }

  /** state is "connecting", "open", "disconnected" or "closed". */
  get state() {
    return this.#link.state;
  }

  /** url is the URL of the hub the client is connected to, or is dialing,
   * or was last connected to. */
  get url() {
    return this.#link.url;
  }

  /** urls lists the hub URLs the client was given, in the order it tries
   * them. */
  get urls() {
    return this.#link.urls;
  }

  /** subscriptions lists the active subscriptions. */
  get subscriptions() {
    return this.#topics.subscriptions;
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
    return this.#calls.send([{ method, params }], options, false).then((r) => r[0].value);
  }

  /**
   * notify sends a notification; no reply comes. It resolves once the
   * message is sent, after waiting for the connection as call does.
   */
  notify(method, params, options = {}) {
    return this.#calls.send([{ method, params, notification: true }], options, false).then(() => undefined);
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
    return this.#calls.send(requests, options, true);
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
    if (this.state === "closed") throw new ClosedError();
    const { since, onPresence, ...callOptions } = options;
    if (since !== undefined && (typeof since?.epoch !== "string" || !Number.isSafeInteger(since?.seq))) {
      throw new TypeError("subscribe: since wants {epoch, seq}, a position an event gave");
    }
    if (onPresence !== undefined && typeof onPresence !== "function") throw new TypeError("subscribe: onPresence wants a function");
    return this.#topics.subscribe(pattern, handler, since, onPresence, callOptions);
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
   *
   * options.description (text) and options.params (the JSON Schema of the
   * params object: {type: "object", properties: {name: schema, ...},
   * required: [name, ...]}) describe a method provided by name in this
   * client's answer to rpc.discover, which the hub relays: through the
   * hub's MCP endpoint it is a tool with that description and input
   * schema. The other options are call()'s, for the rpc.provide.
   */
  async provide(method, handler, options = {}) {
    if (typeof method !== "string" || method === "" || method.startsWith("rpc.")) {
      throw new TypeError(`provide: ${JSON.stringify(method)} cannot be provided (rpc.* is reserved)`);
    }
    if (typeof handler !== "function") throw new TypeError("provide: want a handler function");
    const { description, params, ...callOptions } = options;
    if (description !== undefined && typeof description !== "string") throw new TypeError("provide: description wants a string");
    if (params !== undefined) {
      const ok = params !== null && typeof params === "object" && !Array.isArray(params);
      if (!ok || (params.type !== undefined && params.type !== "object") || (params.properties !== undefined && (params.properties === null || typeof params.properties !== "object"))) {
        throw new TypeError('provide: params wants the JSON Schema of the params object: {type: "object", properties: {...}, required: [...]}');
      }
    }
    if (this.state === "closed") throw new ClosedError();
    return this.#provided.add(method, handler, callOptions, description, params);
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

  /** whoami resolves to how the hub shows this client ({id, user, node,
   * userWord}): the id other peers address it by, and the word of its user
   * in topics (rpc.whoami; see userWord). */
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
   * (-32003 for a peer that did not answer in time). The array's
   * truncated is true when the hub left out the entries that did not fit
   * in one message of its size limit, and its asked is the number of
   * peers called (its length when not truncated); its unanswered names
   * the nodes of a cluster that did not say in time which peers they have
   * (their peers were not called; empty when all did). options are call's:
   * the timeout also bounds the call at the hub, a little before it passes
   * here; signal cancels it at the peers; onProgress gets the rpc.progress
   * data of one peer (the hub passes on none from a user's or a topic's).
   */
  async callPeer(to, method, params, options = {}) {
    const { params: p, kind } = addressParams(to, method, params, options.timeout ?? this.#o.callTimeout);
    const res = await this.call("rpc.call", p, options);
    return kind === "peer" ? res : peerAnswers(res);
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
    return this.#handlers.register(method, handler);
  }

  /**
   * sendRaw sends text as one WebSocket message, as it is, even if it is
   * not JSON: for tools that show the protocol, like the playground. Replies
   * to ids the client did not send itself are not delivered anywhere but
   * to options.trace. It throws a DisconnectedError unless the client is open.
   */
  sendRaw(text) {
    if (this.state !== "open") throw new DisconnectedError();
    this.#calls.sendRaw(String(text));
  }

  /**
   * close closes the connection (code 1000 unless given) and stops
   * reconnecting. Calls waiting or in flight reject with a ClosedError,
   * subscriptions end, and a "state" event reports "closed".
   */
  close(code = 1000, reason = "") {
    this.#link.close(undefined, code, reason);
  }


  // resume subscribes and provides again on a new connection, before
  // anything else is sent: each pattern from the earliest position of its
  // subscriptions. Undefined when there is nothing to do.
  #resume(conn) {
    const resubs = this.#topics.resume();
    const requests = resubs.map((r) => r.request);
    const provide = this.#provided.resume();
    if (provide) requests.push(provide);
    if (requests.length === 0) return undefined;
    return this.#calls.send(requests, { timeout: this.#o.connectTimeout, conn }, true).then((results) => {
      if (conn !== this.#link.current) return;
      results.forEach((r, i) => {
        if (resubs[i]) resubs[i].settle(r);
        else if (r.status !== "fulfilled") this.#report(r.reason, "providing again");
      });
    });
  }

  // receive handles a message from the hub on conn: a message or a batch
  // of them, answering the requests in it (a batch with one batch).
  #receive(conn, text) {
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
    const send = (text) => {
      if (conn === this.#link.current) this.#link.send(conn, text);
    };
    const replies = elems.map((m, i) => this.#dispatch(m, rawIds?.[i], send));
    if (replies.every((r) => r === undefined)) return;
    Promise.all(replies).then((rs) => {
      rs = rs.filter((r) => r !== undefined);
      if (rs.length > 0) send(batch ? `[${rs.join(",")}]` : rs[0]);
    });
  }

  // dispatch handles one message; for a request that gets an answer, it
  // returns a Promise of the encoded response.
  #dispatch(m, rawId, send) {
    if (m === null || typeof m !== "object" || Array.isArray(m)) {
      return Promise.resolve(response(null, { error: { code: -32600, message: "Invalid Request" } }));
    }
    if (typeof m.method !== "string") {
      if ("result" in m || "error" in m) this.#calls.answer(m);
      else return Promise.resolve(response(null, { error: { code: -32600, message: "Invalid Request" } }));
      return undefined;
    }
    const isCall = "id" in m;
    const id = rawId !== undefined ? { raw: rawId } : m.id;
    const p = m.params;
    switch (m.method) {
      case "rpc.event":
        if (p && typeof p.topic === "string") this.#topics.deliver(p);
        return undefined;
      case "rpc.join":
      case "rpc.leave":
        if (p && typeof p.topic === "string") this.#topics.presence(m.method === "rpc.join", p);
        return isCall ? Promise.resolve(response(id, { result: null })) : undefined;
      case "rpc.missed": // events of these patterns were lost between hubs: resume them
        if (p && Array.isArray(p.topics)) this.#topics.missed(p.topics.filter((t) => typeof t === "string"));
        return isCall ? Promise.resolve(response(id, { result: null })) : undefined;
      case "rpc.progress":
        this.#calls.progress(p);
        return undefined;
      case "rpc.cancel":
        this.#handlers.cancel(p?.id);
        return undefined;
      case "rpc.revoked": {
        // The hub ended them: they end here too, then the page is told.
        const ev = new RevokedEvent(p);
        this.#topics.revoke(ev.topics);
        this.#provided.revoke(ev.methods);
        this.dispatchEvent(ev);
        return isCall ? Promise.resolve(response(id, { result: null })) : undefined;
      }
      case "rpc.ping":
        return isCall ? Promise.resolve(response(id, { result: {} })) : undefined;
      case "rpc.discover":
        return isCall ? Promise.resolve(response(id, { result: this.#handlers.describe() })) : undefined;
    }
    return this.#handlers.serve(m, id, isCall, send);
  }

  #report(error, context) {
    const ev = new ClientErrorEvent(error, context);
    this.dispatchEvent(ev);
    if (!ev.defaultPrevented) console.error(`switchboard: ${context}:`, error);
  }
}
