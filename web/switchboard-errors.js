// switchboard-errors.js: the errors the client rejects with, and the
// events it reports its state and its stray errors by. Part of
// switchboard.js, which exports them.

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

/** RevokedError is why a subscription ended when the hub revoked it: the
 * client's authorization (a refreshed token with narrower grants) no longer
 * allows its pattern. topic is the pattern. */
export class RevokedError extends Error {
  constructor(topic) {
    super(`subscription to ${topic} revoked by the hub: no longer allowed`);
    this.name = "RevokedError";
    this.topic = topic;
  }
}

/** RevokedEvent ("revoked") reports that the hub ended subscriptions and
 * provided methods the client's authorization no longer allows
 * (rpc.revoked, after a token refresh with narrower grants): topics are
 * the patterns of the subscriptions ended, methods the provided methods
 * dropped. The client has ended and dropped them already. */
export class RevokedEvent extends Event {
  constructor({ topics, methods } = {}) {
    super("revoked");
    const strings = (a) => (Array.isArray(a) ? a.filter((x) => typeof x === "string") : []);
    this.topics = strings(topics);
    this.methods = strings(methods);
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

// describeClose says in words how a WebSocket closed.
export function describeClose(code, reason) {
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

// connectError says why connect failed: each URL's reason when there are
// several.
export function connectError(failures, url) {
  const last = failures[failures.length - 1];
  const init = { closeCode: last.code, closeReason: last.reason };
  const tried = failures.filter((f) => f.url !== undefined);
  if (tried.length <= 1) return last.error ?? new ConnectionError(`cannot connect to ${url}: ${describeClose(last.code, last.reason)}`, init);
  const each = tried.map((f) => `${f.url}: ${describeClose(f.code, f.reason)}`);
  return new ConnectionError(`cannot connect to any hub: ${each.join("; ")}`, { ...init, cause: last.error });
}
