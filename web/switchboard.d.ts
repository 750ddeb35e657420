// Type declarations for switchboard.js, the JSON-RPC 2.0 client of the
// Switchboard hub. Written by hand; the module needs no build step.
//
// A Client can be typed with a hub's own methods: `rpc gen-ts URL > api.d.ts`
// writes an interface from the hub's rpc.discover document, and
//
//   import type { API } from "./api.js";
//   const rpc = await connect<API>("ws://127.0.0.1:8080/rpc");
//   const n = await rpc.call("add", [1, 2]); // n: number; params checked
//
// Without a type argument every method name and any params are accepted.

/** The shape of a typed API: for each method, its params and its result. */
export interface Method<P = unknown, R = unknown> {
  params: P;
  result: R;
}

/** Methods maps method names to their params and results. */
export type Methods = { [method: string]: Method<any, any> };

/** Untyped accepts any method, with any params, resolving to any result. */
export interface Untyped {
  [method: string]: Method<Params | undefined, any>;
}

/** Params are sent by position (an array) or by name (an object). */
export type Params = readonly unknown[] | { readonly [name: string]: unknown };

/** The hub's system methods, which every Client may call. */
export interface SystemAPI {
  "rpc.ping": Method<undefined, {}>;
  "rpc.discover": Method<undefined, OpenRPCDocument>;
  "rpc.subscribe": Method<{ topic: string; [option: string]: unknown } | string[], { topics: string[]; [field: string]: unknown }>;
  "rpc.unsubscribe": Method<{ topic: string } | string[], { topics: string[] }>;
  "rpc.publish": Method<{ topic: string; data?: unknown } | [topic: string, data?: unknown], { delivered: number; seq?: number; epoch?: string; [field: string]: unknown }>;
  "rpc.history": Method<{ topic: string; limit?: number; since?: Position }, History>;
  "rpc.presence": Method<{ topic: string }, { peers: PeerInfo[] }>;
  "rpc.provide": Method<{ methods: string[] } | string[], { methods: string[] }>;
  "rpc.unprovide": Method<{ methods: string[] } | string[], { methods: string[] }>;
  "rpc.whoami": Method<undefined, WhoAmI>;
  "rpc.call": Method<Address & { method: string; params?: Params; timeout?: number }, any>;
}

/** Address chooses the peers of callPeer (rpc.call): one by id, every peer of a user, or of a topic. */
export type Address = { peer: string; user?: never; topic?: never } | { user: string; peer?: never; topic?: never } | { topic: string; peer?: never; user?: never };

/** PeerAnswer is one peer's answer to a call of a user or a topic. */
export type PeerAnswer<R = unknown> = { peer: PeerInfo; result: R; error?: undefined } | { peer: PeerInfo; error: RPCError; result?: undefined };

/** PeerAnswers is the answer of a call of a user or a topic: one entry per peer, as many as fit in one message of the hub's size limit; truncated says some were left out, asked is the number of peers called (the length when not truncated); unanswered names the nodes of a cluster that did not say in time which peers they have, whose peers were not called (empty when all did). */
export type PeerAnswers<R = unknown> = PeerAnswer<R>[] & { truncated: boolean; asked: number; unanswered: string[] };

/** OpenRPCDocument is what rpc.discover returns (OpenRPC 1.x). */
export interface OpenRPCDocument {
  openrpc: string;
  info: { title: string; version: string; [field: string]: unknown };
  methods: Array<{
    name: string;
    summary?: string;
    description?: string;
    paramStructure?: "by-name" | "by-position" | "either";
    params: Array<{ name: string; required?: boolean; description?: string; schema: JSONSchema }>;
    result?: { name: string; description?: string; schema: JSONSchema };
    [field: string]: unknown;
  }>;
  [field: string]: unknown;
}

/** JSONSchema is a JSON Schema, as rpc.discover describes params and results with. */
export type JSONSchema = { [keyword: string]: any };

type All<API> = API & SystemAPI;
type ParamsOf<API, M extends keyof All<API>> = All<API>[M] extends Method<infer P, any> ? P : never;
type ResultOf<API, M extends keyof All<API>> = All<API>[M] extends Method<any, infer R> ? R : never;

/** CallArgs makes params optional for methods that may be called without any. */
type CallArgs<P, O> = undefined extends P ? [params?: P, options?: O] : [params: P, options?: O];

/** Error codes of JSON-RPC 2.0 and of the Switchboard protocol. */
export declare const ErrorCode: {
  readonly ParseError: -32700;
  readonly InvalidRequest: -32600;
  readonly MethodNotFound: -32601;
  readonly InvalidParams: -32602;
  readonly InternalError: -32603;
  readonly Application: -32000;
  readonly Unauthorized: -32001;
  readonly Cancelled: -32002;
  readonly Timeout: -32003;
  readonly Overloaded: -32004;
  readonly ShuttingDown: -32005;
  readonly ProviderLost: -32006;
  readonly NoSuchPeer: -32007;
};

/**
 * RPCError is a JSON-RPC error: one the other side answered with, or one a
 * registered handler throws to choose the code, message and data it answers.
 */
export declare class RPCError<D = unknown> extends Error {
  constructor(code: number, message: string, data?: D);
  readonly name: "RPCError";
  code: number;
  data?: D;
}

/** ConnectionError is the base of the errors about the connection itself. */
export declare class ConnectionError extends Error {
  constructor(message?: string, init?: { closeCode?: number; closeReason?: string; cause?: unknown });
  /** The WebSocket close code, when known. */
  closeCode?: number;
  /** The WebSocket close reason, or why the connection could not be made. */
  closeReason?: string;
}

/** The call was made while disconnected and was not to wait: it was not sent. */
export declare class DisconnectedError extends ConnectionError {}

/** The connection dropped while the call was in flight: it may or may not have run. */
export declare class ConnectionLostError extends ConnectionError {}

/** The client is closed: close(), or it gave up reconnecting (cause says why). */
export declare class ClosedError extends ConnectionError {}

/** The call's timeout passed first; the hub was told to cancel it. */
export declare class TimeoutError extends Error {
  constructor(method: string, timeout: number);
  readonly name: "TimeoutError";
  /** The timeout, in milliseconds. */
  timeout: number;
}

/** Why a subscription ended when the hub revoked it: the client's authorization (a refreshed token with narrower grants) no longer allows its pattern. */
export declare class RevokedError extends Error {
  constructor(topic: string);
  readonly name: "RevokedError";
  /** The subscription's pattern. */
  topic: string;
}

/** The states of a Client's connection. "closed" is final. */
export type State = "connecting" | "open" | "disconnected" | "closed";

/** StateEvent ("state") reports a change of the connection's state. */
export declare class StateEvent extends Event {
  readonly type: "state";
  readonly state: State;
  /** disconnected, closed: the WebSocket close code (1006 when the handshake failed). */
  readonly code?: number;
  /** disconnected, closed: the close reason, or what a probe of the hub found ("HTTP 401 Unauthorized ..."). */
  readonly reason: string;
  /** disconnected: why, as an Error; closed: why the client gave up, if it did. */
  readonly error?: Error;
  /** connecting: reconnection attempts before this one; disconnected: attempts so far, counting the next. */
  readonly attempt?: number;
  /** disconnected: milliseconds until the next attempt. */
  readonly delay?: number;
  /** connecting: the URL dialed; open: the URL connected to; disconnected: the URL lost or that failed. */
  readonly url?: string;
}

/**
 * ClientErrorEvent ("error") reports an error no caller can receive: a
 * subscriber or a notification handler that threw, a subscription the hub
 * refused after a reconnection, a malformed message. Unless a listener calls
 * preventDefault(), the client also logs it with console.error.
 */
export declare class ClientErrorEvent extends Event {
  readonly type: "error";
  readonly error: unknown;
  /** Where it happened, such as "subscriber of chat.*". */
  readonly context: string;
}

/**
 * RevokedEvent ("revoked") reports that the hub ended subscriptions and provided methods that the client's
 * authorization no longer allows (rpc.revoked, after a token refresh with narrower grants). The client has
 * ended those subscriptions (their error is a RevokedError) and dropped those provisions already; neither
 * comes back after a reconnection.
 */
export declare class RevokedEvent extends Event {
  constructor(params?: { topics?: string[]; methods?: string[] });
  readonly type: "revoked";
  /** The patterns of the subscriptions ended. */
  readonly topics: string[];
  /** The provided methods (names or patterns) dropped. */
  readonly methods: string[];
}

/** An event published on a topic, as the hub delivers it (rpc.event). */
export interface TopicEvent<T = any> {
  /** The topic it was published on. */
  topic: string;
  /** The published value. Shared by every handler it reaches: do not modify it. */
  data: T;
  /** The event's position in the hub's stream, when the hub reports one. */
  seq?: number;
  /** The name of the stream that seq counts in. */
  epoch?: string;
  /** Set on an event the hub replays for a resuming subscription: the pattern it is replayed for. */
  replay?: string;
  /** Never set on an event: a MissedEvent has it true. */
  missed?: false;
  [field: string]: unknown;
}

/** A place in the hub's stream: an epoch and an event's seq in it. */
export interface Position {
  epoch: string;
  seq: number;
}

/**
 * What a subscription's handler gets, in place of an event, when resuming
 * found the hub no longer holding every event published since the
 * subscription's position, or holding another epoch (a hub that
 * restarted), or when the subscription had to drop events it held while
 * waiting for the hub's answer (more than 10000): what was built from the
 * events is stale. The events it still has follow it. In a cluster of
 * hubs, a hub that lost events from another node tells the subscriptions
 * of their topics (rpc.missed): the client resumes them on the same
 * connection, and their handlers get a MissedEvent this way.
 */
export declare class MissedEvent {
  readonly missed: true;
  /** The subscription's pattern. */
  readonly topic: string;
  /** The hub's epoch now. */
  readonly epoch: string;
  /** The position the subscription resumed (or started) from; undefined with a hub that gives no positions. */
  readonly since: Position | undefined;
}

/** A peer as the hub shows it: its id and, when authentication named it, that name. */
export interface PeerInfo {
  id: string;
  user?: string;
  /** In a cluster of hubs, the node the peer is connected to. */
  node?: string;
}

/** How the hub shows this client (rpc.whoami). */
export interface WhoAmI extends PeerInfo {
  /** The word of user in topics and rules, as userWord() writes it; absent without a user. */
  userWord?: string;
}

/** A peer joining (rpc.join) or leaving (rpc.leave) a subscription's pattern. */
export interface PresenceChange {
  join: boolean;
  /** The subscription's pattern. */
  topic: string;
  peer: PeerInfo;
}

export interface SubscribeOptions extends CallOptions {
  /** Start after this position (one an event or sub.position gave): the hub replays the events after it that it holds. */
  since?: Position;
  /** Asks the hub for the pattern's presence changes and receives them, in order with the events. */
  onPresence?: (change: PresenceChange) => void | Promise<void>;
}

export interface HistoryOptions extends CallOptions {
  /** At most this many, the newest; the hub's default (100) when left out. */
  limit?: number;
  /** Only the events after this position. */
  since?: Position;
}

/** The answer to history(): the hub's epoch and latest seq, and the events held, oldest first. */
export interface History<T = any> {
  epoch: string;
  seq: number;
  events: (TopicEvent<T> & { seq: number; epoch: string })[];
  /** True when the events asked for did not fit in one message: these are the newest that did. */
  truncated?: boolean;
}

/** The handler of a subscription: events, and a MissedEvent when resuming could not give them all. */
export type Subscriber<T = any> = (event: TopicEvent<T> | MissedEvent) => void | Promise<void>;

export interface CallOptions {
  /** Aborting rejects the call with the signal's reason and sends rpc.cancel. */
  signal?: AbortSignal;
  /** Milliseconds to wait for the answer, any wait for the connection included. Default: the client's callTimeout. 0: none. */
  timeout?: number;
  /** Fail at once with a DisconnectedError while disconnected, rather than wait. Default: the client's failFast. */
  failFast?: boolean;
  /** Receives the data of each rpc.progress the callee sends for this call. */
  onProgress?: (data: any) => void;
}

/** The JSON Schema of a provided method's params object: each property is a named param. */
export interface ParamsSchema {
  type?: "object";
  properties?: Record<string, unknown>;
  required?: readonly string[];
  [keyword: string]: unknown;
}

/** Options of provide(): a description for rpc.discover (and so for the hub's MCP tools), and call()'s for the rpc.provide. */
export interface ProvideOptions extends CallOptions {
  /** What the method does: the MCP tool's description. */
  description?: string;
  /** The JSON Schema of its params object: the MCP tool's input schema. */
  params?: ParamsSchema;
}

export type NotifyOptions = Pick<CallOptions, "signal" | "timeout" | "failFast">;
export type BatchOptions = Pick<CallOptions, "signal" | "timeout" | "failFast">;

/** One element of a batch. */
export type BatchRequest<API = Untyped> = {
  [M in keyof All<API> & string]: { method: M; params?: ParamsOf<API, M>; notification?: boolean };
}[keyof All<API> & string];

/** The outcome of one element of a batch, shaped as Promise.allSettled's. */
export type BatchResult<T = any> = { status: "fulfilled"; value: T } | { status: "rejected"; reason: RPCError };

export interface HandlerContext {
  /** Aborts when the caller cancels (rpc.cancel) or the connection drops. */
  signal: AbortSignal;
  /** Sends rpc.progress with data to the caller of this call. */
  progress(data: unknown): void;
  /** The request's id; undefined for a notification. */
  id: string | number | bigint | null | undefined;
  method: string;
}

/**
 * A Handler serves one method for the hub: its return value (or the value
 * its Promise resolves to) is the result. Throw an RPCError to choose the
 * error code, message and data; any other error answers -32000.
 */
export type Handler<P = any, R = unknown> = (params: P, context: HandlerContext) => R | Promise<R>;

export interface ClientOptions {
  /** The WebSocket constructor. Default: globalThis.WebSocket (browsers, Node.js 22+); in Node.js 20, pass the ws package's. */
  WebSocket?: new (url: string, protocols?: string | string[]) => WebSocket | any;
  /**
   * A bearer token, or a function returning one (called before each connection attempt, so it may refresh it).
   * Sent as the WebSocket subprotocol "switchboard.bearer.<base64url(token)>", beside "switchboard".
   * A function is also called again before a JSON Web Token's `exp` (a quarter of its remaining life before,
   * at most 30 s before), and the new token is sent with `rpc.auth`, so that the hub does not close the
   * connection with 4001. A refresh that fails (the function throws, or the hub refuses the token) is an
   * "error" event (ClientErrorEvent, context "refreshing the token"), tried again while the old token holds.
   */
  token?: string | (() => string | undefined | Promise<string | undefined>);
  /** Milliseconds a call may take, waiting for the connection included. Default 30000; 0: no limit. */
  callTimeout?: number;
  /** Milliseconds one connection attempt may take, re-subscribing included. Default 10000. */
  connectTimeout?: number;
  /** Milliseconds between rpc.ping checks; one unanswered by the next closes the connection, and the client reconnects. Default 30000; 0: never. */
  pingInterval?: number;
  /** The pause before the first reconnection attempt; it doubles at each failure up to maxBackoff, drawn at random between half and all of it. Defaults 100 and 10000 ms. */
  minBackoff?: number;
  maxBackoff?: number;
  /** Reconnection attempts in a row, over all its URLs, before the client gives up and closes. Default Infinity; 0: never reconnect. */
  maxAttempts?: number;
  /** Calls made while disconnected fail at once with a DisconnectedError instead of waiting. Default false. */
  failFast?: boolean;
  /** Read integers beyond 2^53 in messages as BigInt, exactly, where the runtime allows (see bigNumbersSupported). Default false. */
  bigNumbers?: boolean;
  /** When a handshake fails, POST rpc.ping to the hub to learn why (browsers do not tell) and report it as the reason. Default true. */
  probe?: boolean;
  /** Called with every message sent and received, as text: for logs and tools. */
  trace?: (direction: "send" | "receive", text: string) => void;
}

/** A Subscription is one handler subscribed to a topic pattern. */
export declare class Subscription<T = any> {
  /** The pattern subscribed to. */
  readonly topic: string;
  readonly handler: Subscriber<T>;
  /** True until unsubscribe(), the client's close(), or the hub revoking it. */
  readonly active: boolean;
  /** Why it ended, unless by unsubscribe(): a RevokedError when the hub revoked it, a ClosedError when the client closed. */
  readonly error: RevokedError | ClosedError | undefined;
  /** The position of the last event it took, or before any, of its start: save it to resume later (options.since). Undefined until the hub has answered. */
  readonly position: Position | undefined;
  /** Stops the deliveries at once and, unless another subscription has the same pattern, tells the hub. */
  unsubscribe(): Promise<void>;
}

/** A method, or a pattern of methods, that the client provides. */
export declare class Provision {
  readonly method: string;
  readonly handler: Handler;
  /** The description provide() was given, if any. */
  readonly description: string | undefined;
  /** The params' JSON Schema provide() was given, if any. */
  readonly params: ParamsSchema | undefined;
  /** Tells the hub to stop forwarding its calls (rpc.unprovide); then the handler stops serving. A provide() of the same method made meanwhile waits for it. */
  withdraw(): Promise<void>;
}

/**
 * Client is a connection to a hub that stays up: it dials at once, and again
 * with exponential backoff whenever the connection drops, re-subscribes its
 * topics before anything else is sent, and reports each change as a "state"
 * event. API, if given, types call, notify and batch (see `rpc gen-ts`).
 *
 * Given the URLs of a cluster's nodes, it tries them in turn until one
 * answers, and each attempt after a loss goes to the URL after the last one
 * tried; subscriptions resume on the new node from their positions.
 */
export declare class Client<API extends object = Untyped> extends EventTarget {
  constructor(url: string | URL | readonly (string | URL)[], options?: ClientOptions);
  /** The URL of the hub it is connected to, dialing, or was last connected to. */
  readonly url: string;
  /** The URLs it was given, each once, in the order it tries them. */
  readonly urls: string[];
  readonly state: State;
  /** The active subscriptions. */
  readonly subscriptions: Subscription[];

  /** Calls method and resolves to its result; rejects with an RPCError, TimeoutError, ConnectionError or the signal's reason. */
  call<M extends keyof All<API> & string>(method: M, ...args: CallArgs<ParamsOf<API, M>, CallOptions>): Promise<ResultOf<API, M>>;
  /** Sends a notification; resolves once it is sent. */
  notify<M extends keyof All<API> & string>(method: M, ...args: CallArgs<ParamsOf<API, M>, NotifyOptions>): Promise<void>;
  /** Sends the requests as one batch; resolves to one outcome per request, in order. */
  batch(requests: readonly BatchRequest<API>[], options?: BatchOptions): Promise<BatchResult[]>;
  /** Publishes data on topic; resolves to the number of peers reached. */
  publish(topic: string, data?: unknown, options?: CallOptions): Promise<number>;
  /** Subscribes handler to the topics matching pattern ("chat.*", "news.>"); it resumes from its position after a reconnection. */
  subscribe<T = any>(pattern: string, handler: Subscriber<T>, options?: SubscribeOptions): Promise<Subscription<T>>;
  /** Serves method (a name, or a pattern such as "billing.*") to the hub's other peers, which call it through the hub; provided again after each reconnection. */
  provide<P = any, R = unknown>(method: string, handler: Handler<P, R>, options?: ProvideOptions): Promise<Provision>;
  /** The recent events of a topic or pattern that the hub holds (rpc.history). */
  history<T = any>(topic: string, options?: HistoryOptions): Promise<History<T>>;
  /** The peers that an event published on topic would reach (rpc.presence). */
  presence(topic: string, options?: CallOptions): Promise<PeerInfo[]>;
  /** How the hub shows this client (rpc.whoami): the id other peers call it by. */
  whoami(options?: CallOptions): Promise<WhoAmI>;
  /** Calls method on one peer, by id or {peer}, and resolves to its result (rpc.call); -32007 when no such peer is connected. */
  callPeer<R = any>(to: string | { peer: string }, method: string, params?: Params, options?: CallOptions): Promise<R>;
  /** Calls method on every peer of a user or a topic (this client left out) and resolves to one answer per peer. */
  callPeer<R = any>(to: { user: string; peer?: never; topic?: never } | { topic: string; peer?: never; user?: never }, method: string, params?: Params, options?: CallOptions): Promise<PeerAnswers<R>>;
  /** callPeer({user}, ...). */
  callUser<R = any>(user: string, method: string, params?: Params, options?: CallOptions): Promise<PeerAnswers<R>>;
  /** callPeer({topic}, ...). */
  callTopic<R = any>(topic: string, method: string, params?: Params, options?: CallOptions): Promise<PeerAnswers<R>>;
  /** Serves method for the hub; returns a function that unregisters it. */
  register<P = any, R = unknown>(method: string, handler: Handler<P, R>): () => void;
  /** Sends text as one message, unchecked (it need not be JSON). Throws a DisconnectedError unless open. */
  sendRaw(text: string): void;
  /** Closes the connection and stops reconnecting. */
  close(code?: number, reason?: string): void;

  addEventListener(type: "state", listener: (event: StateEvent) => void, options?: boolean | AddEventListenerOptions): void;
  addEventListener(type: "error", listener: (event: ClientErrorEvent) => void, options?: boolean | AddEventListenerOptions): void;
  addEventListener(type: "revoked", listener: (event: RevokedEvent) => void, options?: boolean | AddEventListenerOptions): void;
  addEventListener(type: string, listener: EventListenerOrEventListenerObject | null, options?: boolean | AddEventListenerOptions): void;
  removeEventListener(type: "state", listener: (event: StateEvent) => void, options?: boolean | EventListenerOptions): void;
  removeEventListener(type: "error", listener: (event: ClientErrorEvent) => void, options?: boolean | EventListenerOptions): void;
  removeEventListener(type: "revoked", listener: (event: RevokedEvent) => void, options?: boolean | EventListenerOptions): void;
  removeEventListener(type: string, listener: EventListenerOrEventListenerObject | null, options?: boolean | EventListenerOptions): void;
}

/**
 * connect opens a Client and resolves to it once its first connection is
 * open, trying each URL once when given several; if none answers, it closes
 * the client and rejects with a ConnectionError saying why (for each URL).
 */
export declare function connect<API extends object = Untyped>(url: string | URL | readonly (string | URL)[], options?: ClientOptions): Promise<Client<API>>;

/**
 * userWord returns an identity escaped into one topic word, as the hub puts it into topics, rules ({user}) and
 * rpc.call addresses: letters, digits, "_" and "-" stay, every other byte of its UTF-8 becomes ":" and two
 * lower-case hex digits ("john.doe@example.com" -> "john:2edoe:40example:2ecom", "*" -> ":2a").
 */
export declare function userWord(identity: string): string;

/** matches reports whether topic matches a subscription pattern ("*" one word, a final ">" one or more). */
export declare function matches(pattern: string, topic: string): boolean;

/** Whether this runtime can read integers beyond 2^53 exactly (JSON.parse source text access), for options.bigNumbers. */
export declare const bigNumbersSupported: boolean;
