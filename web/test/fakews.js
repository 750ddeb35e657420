// An in-memory WebSocket for the client's unit tests: each socket the client
// opens is handed to the test as a Peer, the hub's end, which accepts or
// refuses the handshake, reads what the client sent and answers.

import { Client } from "../switchboard.js";

export class FakeNet {
  #peers = [];
  #waiters = [];

  constructor() {
    const net = this;
    this.WebSocket = class FakeWebSocket extends EventTarget {
      static CONNECTING = 0;
      static OPEN = 1;
      static CLOSING = 2;
      static CLOSED = 3;

      constructor(url, protocols) {
        super();
        this.url = url;
        this.protocols = protocols === undefined ? [] : [].concat(protocols);
        this.protocol = "";
        this.readyState = 0;
        this.binaryType = "blob";
        net.#arrive(new Peer(this));
      }

      send(text) {
        if (this.readyState === 0) throw new Error("InvalidStateError: still connecting");
        if (this.readyState !== 1) return;
        this._peer._push(text);
      }

      close(code = 1000, reason = "") {
        if (this.readyState >= 2) return;
        this.readyState = 2;
        this._peer._closedByClient({ code, reason });
        queueMicrotask(() => this._end(code, reason));
      }

      _end(code, reason) {
        if (this.readyState === 3) return;
        this.readyState = 3;
        this.dispatchEvent(Object.assign(new Event("close"), { code, reason, wasClean: code !== 1006 }));
      }
    };
  }

  #arrive(peer) {
    const w = this.#waiters.shift();
    if (w) w(peer);
    else this.#peers.push(peer);
  }

  /** next resolves to the hub's end of the next socket the client opens. */
  next() {
    const p = this.#peers.shift();
    if (p) return Promise.resolve(p);
    return new Promise((resolve) => this.#waiters.push(resolve));
  }
}

/** Peer is the hub's end of one fake socket. */
export class Peer {
  #ws;
  #inbox = [];
  #readers = [];
  #closed;
  #resolveClosed;

  constructor(ws) {
    this.#ws = ws;
    ws._peer = this;
    this.url = ws.url;
    this.protocols = ws.protocols;
    this.#closed = new Promise((r) => (this.#resolveClosed = r));
  }

  /** accept completes the handshake, choosing protocol. */
  accept(protocol = "") {
    this.#ws.protocol = protocol;
    this.#ws.readyState = 1;
    this.#ws.dispatchEvent(new Event("open"));
  }

  /** refuse fails the handshake, as a browser reports a 401: code 1006. */
  refuse() {
    this.#ws.dispatchEvent(new Event("error"));
    this.#ws._end(1006, "");
  }

  /** send delivers a message (an object is encoded as JSON) to the client. */
  send(msg) {
    const data = typeof msg === "string" ? msg : JSON.stringify(msg);
    this.#ws.dispatchEvent(Object.assign(new Event("message"), { data }));
  }

  /** close closes the socket from the hub's side. */
  close(code = 1000, reason = "") {
    this.#ws.readyState = 3;
    this.#ws.dispatchEvent(Object.assign(new Event("close"), { code, reason, wasClean: true }));
  }

  /** readText resolves to the next message the client sent, as text. */
  readText() {
    const m = this.#inbox.shift();
    if (m !== undefined) return Promise.resolve(m);
    return new Promise((resolve) => this.#readers.push(resolve));
  }

  /** read resolves to the next message the client sent, decoded. */
  async read() {
    return JSON.parse(await this.readText());
  }

  /** pending is how many sent messages are not read yet. */
  get pending() {
    return this.#inbox.length;
  }

  /** closed resolves to {code, reason} once the client closes the socket. */
  get closed() {
    return this.#closed;
  }

  _push(text) {
    const r = this.#readers.shift();
    if (r) r(text);
    else this.#inbox.push(text);
  }

  _closedByClient(how) {
    this.#resolveClosed(how);
  }
}

/** events collects the "state" events of client as [state, code, reason]. */
export function states(client) {
  const seen = [];
  const waiters = [];
  client.addEventListener("state", (e) => {
    seen.push(e);
    for (const w of [...waiters]) {
      if (w.state === e.state) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(e);
      }
    }
  });
  return {
    seen,
    names: () => seen.map((e) => e.state),
    /** until resolves with the next "state" event of that state. */
    until: (state) => new Promise((resolve) => waiters.push({ state, resolve })),
  };
}

/**
 * open starts a client on the URL (or URLs) over a fake network, completes
 * its first handshake and closes it when the test ends.
 */
export async function open(t, urls, options = {}) {
  const net = new FakeNet();
  const client = new Client(urls, { WebSocket: net.WebSocket, probe: false, pingInterval: 0, minBackoff: 1, maxBackoff: 1, ...options });
  t.after(() => client.close());
  const st = states(client);
  const { peer, opened } = await acceptNext(net, st);
  await opened;
  return { net, client, peer, st };
}

/**
 * acceptNext takes the next socket the client opens and accepts its
 * handshake (with protocol); opened resolves when the client is open,
 * which after a reconnection is once it has subscribed and provided again.
 */
export async function acceptNext(net, st, protocol) {
  const peer = await net.next();
  const opened = st.until("open");
  peer.accept(protocol);
  return { peer, opened };
}

/**
 * errorsOf collects the client's "error" events, handled (so that they are
 * not thrown), as what pick makes of each.
 */
export function errorsOf(client, pick = (e) => e.context) {
  const seen = [];
  client.addEventListener("error", (e) => {
    e.preventDefault();
    seen.push(pick(e));
  });
  return seen;
}

/** reply answers the next request the client sent with result. */
export async function reply(peer, result) {
  const req = await peer.read();
  peer.send({ jsonrpc: "2.0", id: req.id, result });
  return req;
}
