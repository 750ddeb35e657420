// switchboard-connection.js: the connection's state machine. It dials,
// opens, loses the socket, backs off and dials again (the next URL of a
// cluster), pings, refreshes an expiring token, and closes for good. What
// each step means for the calls, subscriptions and handlers is the
// client's, told through the hooks it gives. Part of switchboard.js.

import { ClosedError, ConnectionError, ConnectionLostError, StateEvent, describeClose } from "./switchboard-errors.js";

const noTimer = 0;

// A token from a token function is replaced a quarter of its remaining
// life before its exp, at most this long before (ms); a failed refresh is
// tried again after half the time left, at least minRefreshRetry.
const maxRefreshMargin = 30_000;
const minRefreshRetry = 500;

// Connection is a client's socket and its life. hooks are the client's:
//
//   emit(event)          dispatches a StateEvent
//   report(err, context) reports an error no caller can receive
//   receive(conn, text)  handles a message that came on conn
//   resume(conn)         subscribes and provides again on a new conn, before
//                        anything else; undefined, or a Promise that
//                        rejects when that failed
//   opened()             the client is open: send what waited
//   lost(err)            conn is gone: fail what was in flight
//   closed(err)          the client is closed, for good
//   ping(conn, onPong)   sends rpc.ping, calling onPong on its answer
//   auth(token)          sends rpc.auth with a fresh token
export class Connection {
  #o;
  #WS;
  #hooks;
  #urls; // the hub's URLs: one, or a cluster's nodes
  #at = 0; // index in #urls of the current or last connection
  #tried = 1; // URLs tried before the first connection opened; then Infinity
  #state = "connecting";
  #conn = null; // {ws, open, token}: the current socket
  #retries = 0; // reconnection attempts since the last open
  #retryTimer = noTimer;
  #pingTimer = noTimer;
  #tokenTimer = noTimer;
  #pingOut = false;
  #online = () => {
    if (this.#state === "disconnected" && this.#retryTimer !== noTimer) {
      clearTimeout(this.#retryTimer);
      this.#retryTimer = noTimer;
      this.#dial();
    }
  };

  constructor(urls, options, WS, hooks) {
    this.#urls = urls;
    this.#o = options;
    this.#WS = WS;
    this.#hooks = hooks;
    globalThis.addEventListener?.("online", this.#online);
    // Dial after the client's constructor returns, so that "state"
    // listeners added right after it see "connecting".
    queueMicrotask(() => this.#dial());
  }

  get state() {
    return this.#state;
  }

  get url() {
    return this.#urls[this.#at];
  }

  get urls() {
    return [...this.#urls];
  }

  /** current is the socket, {ws, open, token}, or null between sockets. */
  get current() {
    return this.#conn;
  }

  // send sends text on conn, showing it to options.trace first.
  send(conn, text) {
    this.#trace("send", text);
    conn.ws.send(text);
  }

  // trace shows a message to options.trace. What the trace throws is
  // reported, never lets a message be lost.
  #trace(direction, text) {
    try {
      this.#o.trace?.(direction, text);
    } catch (err) {
      this.#hooks.report(err, "trace");
    }
  }

  #setState(state, detail) {
    if (this.#state === "closed") return;
    this.#state = state;
    this.#hooks.emit(new StateEvent(state, detail));
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
      return this.close(err); // a malformed URL will not get better
    }
    const conn = { ws, open: false, token };
    this.#conn = conn;
    ws.binaryType = "arraybuffer";
    const timer = setTimeout(() => this.#lost(conn, 4000, "connect timeout"), this.#o.connectTimeout);
    ws.addEventListener("open", () => {
      clearTimeout(timer);
      this.#opened(conn);
    });
    ws.addEventListener("message", (e) => {
      if (conn !== this.#conn) return;
      const text = typeof e.data === "string" ? e.data : new TextDecoder().decode(e.data);
      this.#trace("receive", text);
      this.#hooks.receive(conn, text);
    });
    ws.addEventListener("close", (e) => {
      clearTimeout(timer);
      this.#lost(conn, e.code, e.reason);
    });
    ws.addEventListener("error", () => {}); // a close event follows
  }

  async #opened(conn) {
    if (conn !== this.#conn) return;
    conn.open = true;
    const resuming = this.#hooks.resume(conn);
    if (resuming) {
      try {
        await resuming;
      } catch (err) {
        if (conn === this.#conn) this.#lost(conn, 4000, "re-subscribing failed", err);
        return;
      }
    }
    if (conn !== this.#conn) return;
    this.#retries = 0;
    this.#tried = Infinity;
    this.#pingOut = false;
    if (this.#o.pingInterval > 0) this.#pingTimer = setInterval(() => this.#ping(conn), this.#o.pingInterval);
    this.#armRefresh(conn);
    this.#setState("open", { url: this.url });
    if (conn !== this.#conn) return;
    this.#hooks.opened();
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
    this.#hooks.ping(conn, () => {
      this.#pingOut = false;
    });
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
    this.#hooks.lost(new ConnectionLostError(`connection lost: ${describeClose(code, reason)}`, { closeCode: code, closeReason: reason, cause }));
    this.#failed(conn, code, reason, cause);
  }

  async #failed(conn, code, reason, cause) {
    if (this.#state === "closed") return;
    if (conn && !conn.open && this.#o.probe && !reason) {
      reason = await probe(this.url, conn.token, this.#o.connectTimeout);
      if (this.#state === "closed") return;
    }
    const error = new ConnectionError(`${conn?.open ? "connection lost" : "cannot connect"}: ${describeClose(code, reason)}`, {
      closeCode: code,
      closeReason: reason,
      cause,
    });
    if (this.#retries >= this.#o.maxAttempts) {
      const msg = this.#o.maxAttempts > 0 ? `gave up after ${this.#retries} attempts` : "connection ended";
      return this.close(new ClosedError(`${msg}: ${describeClose(code, reason)}`, { closeCode: code, closeReason: reason, cause }));
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

  // ---- tokens that expire (docs/security.md, "Identity and rules") ----

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
      await this.#hooks.auth(token);
      conn.token = token;
      if (conn === this.#conn) this.#armRefresh(conn);
    } catch (err) {
      if (conn !== this.#conn) return;
      this.#hooks.report(new Error(`token refresh failed: ${err?.message ?? err}`, { cause: err }), "refreshing the token");
      const left = (tokenExpiry(conn.token) ?? 0) - Date.now();
      if (left > 0 && conn === this.#conn) this.#armRefresh(conn, Math.max(left / 2, minRefreshRetry));
    }
  }

  // close closes the socket (code and reason) and the client for good,
  // because of cause (an Error) if given.
  close(cause, code = 1000, reason = "") {
    if (this.#state === "closed") return;
    this.#state = "closed";
    clearTimeout(this.#retryTimer);
    clearInterval(this.#pingTimer);
    clearTimeout(this.#tokenTimer);
    globalThis.removeEventListener?.("online", this.#online);
    const conn = this.#conn;
    this.#conn = null;
    this.#hooks.closed(cause instanceof ClosedError ? cause : new ClosedError(cause ? `client closed: ${cause.message}` : undefined, { cause }));
    try {
      conn?.ws.close(code, reason);
    } catch {
      conn?.ws.close();
    }
    this.#hooks.emit(new StateEvent("closed", { code, reason, error: cause }));
  }
}

// probe finds out why a WebSocket handshake to url failed, which browsers
// do not tell (the close code is 1006 whatever happened): it POSTs
// rpc.ping to the same URL and reads the HTTP status.
async function probe(url, token, timeout) {
  if (typeof fetch !== "function") return "";
  const headers = { "Content-Type": "application/json" };
  if (token) headers.Authorization = "Bearer " + token;
  try {
    const resp = await fetch(url.replace(/^ws/, "http"), {
      method: "POST",
      headers,
      body: '{"jsonrpc":"2.0","method":"rpc.ping","id":0}',
      signal: AbortSignal.timeout(Math.min(timeout, 5000)),
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

function base64url(s) {
  let bin = "";
  for (const b of new TextEncoder().encode(s)) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}
