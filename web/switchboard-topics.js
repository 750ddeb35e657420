// switchboard-topics.js: a client's subscriptions. Topics holds them by
// pattern (a Pattern: whether the hub has it, the order of its rpc.subscribe
// and rpc.unsubscribe); each Subscription keeps its own state, its Feed:
// where it is in the hub's stream, what it holds until the hub has
// answered, and the rules by which it takes each event once and in order,
// across its start and reconnections. Part of switchboard.js.

import { ClosedError, ConnectionError, RevokedError } from "./switchboard-errors.js";

// How many positions a handler shared by subscriptions remembers, so as to
// take an event replayed for each of them once.
const recentPositions = 10_000;

// How many events and presence changes a subscription holds while it
// waits for its rpc.subscribe answer; past that it drops them and reports
// a MissedEvent.
const maxHeld = 10_000;

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

/**
 * userWord returns an identity (a token's subject, the user of whoami())
 * escaped into one topic word, as the hub puts it into topics, rules
 * ({user}) and rpc.call addresses: letters, digits, "_" and "-" stay, every
 * other byte of its UTF-8 becomes ":" and two lower-case hex digits, so
 * that an identity is a name, never a pattern. "user." +
 * userWord("john.doe@example.com") is "user.john:2edoe:40example:2ecom".
 */
export function userWord(identity) {
  if (typeof identity !== "string") throw new TypeError("userWord: want a string");
  if (/^[A-Za-z0-9_-]*$/.test(identity)) return identity;
  let out = "";
  for (const b of new TextEncoder().encode(identity)) {
    const c = String.fromCharCode(b);
    out += /[A-Za-z0-9_-]/.test(c) ? c : ":" + b.toString(16).padStart(2, "0");
  }
  return out;
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

/** Subscription is one handler subscribed to a topic pattern. */
export class Subscription {
  #feed;

  constructor(feed) {
    this.#feed = feed;
    this.topic = feed.pattern.name;
    this.handler = feed.handler;
  }

  /** active is true until unsubscribe, the client's close, or the hub
   * revoking the subscription. */
  get active() {
    return this.#feed.active;
  }

  /** error is why the subscription ended when it did not end by
   * unsubscribe(): a RevokedError when the hub revoked it (it is not
   * subscribed again), a ClosedError when the client closed. */
  get error() {
    return this.#feed.error;
  }

  /**
   * position is where the subscription is in the hub's stream, {epoch,
   * seq}: the last event it took, or before any, where it started. Save it
   * to resume in another run of the page (subscribe's options.since).
   * Undefined until the hub has answered, and with a hub that gives no
   * positions.
   */
  get position() {
    return this.#feed.position();
  }

  /**
   * unsubscribe stops the deliveries at once and, unless another
   * subscription of the client has the same pattern, tells the hub
   * (rpc.unsubscribe) and resolves once it has answered.
   */
  unsubscribe() {
    return this.#feed.unsubscribe();
  }
}

// Topics is a client's subscriptions, by pattern. It calls the hub with
// call(method, params, options) and reports what no caller can receive
// with report(error, context), both the client's.
export class Topics {
  #patterns = new Map(); // pattern -> Pattern
  #shared = new Map(); // handler function -> Shared: its subscriptions
  #call;
  report;

  constructor(call, report) {
    this.#call = call;
    this.report = report;
  }

  /** subscriptions lists the active subscriptions. */
  get subscriptions() {
    const out = [];
    for (const p of this.#patterns.values()) for (const f of p.feeds) if (f.active) out.push(f.sub);
    return out;
  }

  // subscribe adds a subscription of handler to name and resolves to it
  // once the hub has accepted the pattern: Client.subscribe.
  async subscribe(name, handler, since, onPresence, callOptions) {
    let pattern = this.#patterns.get(name);
    if (!pattern) this.#patterns.set(name, (pattern = new Pattern(name)));
    let shared = this.#shared.get(handler);
    if (!shared) this.#shared.set(handler, (shared = new Shared()));
    const feed = new Feed(this, pattern, handler, shared, onPresence, since);
    pattern.feeds.add(feed);
    try {
      await pattern.inOrder(async () => {
        if (!feed.active || feed.known) return;
        // A subscription from now shares the rpc.subscribe of a started
        // one of its pattern: every event that comes after this moment
        // is after that one's position.
        const twin = since ? undefined : [...pattern.feeds].find((f) => f !== feed && f.known && f.active && (f.onPresence || !onPresence));
        if (pattern.onHub && twin) {
          // What it held came after it was made: all its own.
          feed.start(null, undefined);
          feed.pos ??= twin.pos && { ...twin.pos };
          return;
        }
        const params = { topic: name };
        if (since) params.since = { epoch: since.epoch, seq: since.seq };
        if (onPresence) params.presence = true;
        const res = await this.#call("rpc.subscribe", params, callOptions);
        pattern.onHub = true;
        feed.start(res, since);
      });
    } catch (err) {
      this.drop(feed);
      throw err;
    }
    if (!feed.active) throw new ClosedError("subscription ended before the hub accepted it");
    return feed.sub;
  }

  // drop ends feed's subscription and, when it was the last of its
  // pattern, unsubscribes the pattern on the hub.
  drop(feed) {
    feed.end();
    const pattern = feed.pattern;
    if (!pattern.feeds.delete(feed)) return Promise.resolve();
    if (--feed.shared.n === 0) this.#shared.delete(feed.handler);
    if (pattern.feeds.size > 0) return Promise.resolve();
    return pattern.inOrder(async () => {
      if (pattern.feeds.size > 0) return; // subscribed again meanwhile
      if (this.#patterns.get(pattern.name) === pattern) this.#patterns.delete(pattern.name);
      if (!pattern.onHub) return;
      pattern.onHub = false;
      try {
        await this.#call("rpc.unsubscribe", { topic: pattern.name }, { failFast: true });
      } catch (err) {
        // The hub forgets a connection's subscriptions with it.
        if (!(err instanceof ConnectionError)) throw err;
      }
    });
  }

  // deliver hands an rpc.event to the subscriptions it is for: a replayed
  // event to those of the pattern it is replayed for, a live one to those
  // of every pattern it matches. A handler gets it once.
  deliver(event) {
    const seen = new Set();
    for (const [name, pattern] of this.#patterns) {
      if (event.replay !== undefined ? event.replay !== name : !matches(name, event.topic)) continue;
      for (const feed of pattern.feeds) if (feed.active) feed.take(event, seen);
    }
  }

  // presence hands an rpc.join (join true) or rpc.leave to the
  // subscriptions of its pattern that asked for presence.
  presence(join, p) {
    const change = { join, topic: p.topic, peer: p.peer };
    for (const feed of this.#patterns.get(p.topic)?.feeds ?? []) if (feed.active) feed.presence(change);
  }

  // resume lists, for a new connection, the rpc.subscribe of each pattern
  // that has active subscriptions, from the earliest of their positions,
  // each with settle(outcome) to take in its answer (an entry of
  // Promise.allSettled's).
  resume() {
    const out = [];
    for (const [name, pattern] of this.#patterns) {
      const feeds = [...pattern.feeds].filter((f) => f.active);
      if (feeds.length === 0) continue;
      const params = { topic: name };
      for (const f of feeds) {
        if (f.onPresence) params.presence = true;
        if (!f.pos?.epoch) continue;
        if (!params.since) params.since = { ...f.pos };
        else if (f.pos.epoch === params.since.epoch && f.pos.seq < params.since.seq) params.since.seq = f.pos.seq;
      }
      const settle = (r) => {
        if (r.status !== "fulfilled") return this.report(r.reason, `re-subscribing to ${name}`);
        pattern.onHub = true;
        for (const f of feeds) f.start(r.value, f.pos?.epoch ? f.pos : undefined);
      };
      out.push({ request: { method: "rpc.subscribe", params }, settle });
    }
    return out;
  }

  // missed resumes the subscriptions to the patterns an rpc.missed names,
  // on the same connection: in a cluster of hubs, the hub lost events from
  // another node on topics they match. Each pattern subscribes again from
  // the earliest position of its subscriptions; they hold their events
  // until the answer is in, which says recovered: false, so their
  // handlers get a MissedEvent, then every later event once and in order.
  missed(names) {
    for (const name of names) {
      const pattern = this.#patterns.get(name);
      if (!pattern?.onHub) continue;
      const feeds = [...pattern.feeds].filter((f) => f.active && f.known && f.pos?.epoch);
      if (feeds.length === 0) continue;
      const params = { topic: name };
      for (const f of feeds) {
        f.reset();
        if (f.onPresence) params.presence = true;
        if (!params.since) params.since = { ...f.pos };
        else if (f.pos.epoch === params.since.epoch && f.pos.seq < params.since.seq) params.since.seq = f.pos.seq;
      }
      pattern
        .inOrder(() => this.#call("rpc.subscribe", params, { failFast: true }))
        .then(
          (res) => {
            for (const f of feeds) f.start(res, f.pos);
          },
          (err) => {
            // A lost connection is resumed by the reconnection.
            if (err instanceof ConnectionError) return;
            this.report(err, `resuming ${name} after missed events`);
            for (const f of feeds) f.start({ ...params.since, recovered: false }, f.pos);
          },
        );
    }
  }

  // lost forgets what the hub had: the connection is gone.
  lost() {
    for (const pattern of this.#patterns.values()) {
      pattern.onHub = false;
      for (const feed of pattern.feeds) feed.reset();
    }
  }

  // revoke ends the subscriptions to the patterns the hub revoked, with
  // a RevokedError each; the hub has unsubscribed them already.
  revoke(names) {
    for (const name of names) {
      const pattern = this.#patterns.get(name);
      if (!pattern) continue;
      this.#patterns.delete(name);
      pattern.onHub = false;
      for (const feed of pattern.feeds) {
        feed.end(new RevokedError(name));
        if (--feed.shared.n === 0) this.#shared.delete(feed.handler);
      }
      pattern.feeds.clear();
    }
  }

  // close ends every subscription: the client is closed.
  close() {
    for (const pattern of this.#patterns.values()) {
      for (const feed of pattern.feeds) feed.end(new ClosedError());
      pattern.feeds.clear();
    }
    this.#patterns.clear();
    this.#shared.clear();
  }
}

// Pattern is one pattern of a client's subscriptions.
class Pattern {
  feeds = new Set(); // its subscriptions' feeds
  onHub = false; // the hub has accepted its rpc.subscribe on this connection
  #queue = Promise.resolve();

  constructor(name) {
    this.name = name;
  }

  // inOrder runs fn after the operations queued before it, so that an
  // rpc.subscribe and an rpc.unsubscribe of the pattern reach the hub in
  // the order they were asked for.
  inOrder(fn) {
    const run = this.#queue.then(fn);
    this.#queue = run.catch(() => {});
    return run;
  }
}

// Shared is what the subscriptions of one handler function share: a
// handler of several subscriptions gets an event once. Replays are per
// pattern, so one event may come once for each: it remembers the
// positions it got lately.
class Shared {
  n = 0; // how many subscriptions it has
  #epoch;
  #seqs = new Set();

  // first reports whether the handler is getting the event at seq of
  // epoch for the first time, and remembers it.
  first(epoch, seq) {
    if (this.#epoch !== epoch) {
      this.#epoch = epoch;
      this.#seqs.clear();
    }
    if (this.#seqs.has(seq)) return false;
    this.#seqs.add(seq);
    if (this.#seqs.size > recentPositions) this.#seqs.delete(this.#seqs.values().next().value);
    return true;
  }
}

// Feed is the state of one subscription: its position in the hub's
// stream and what it holds until its rpc.subscribe answer is in.
//
// How its events stay in order and free of duplicates, across its start
// and reconnections, with subscriptions to overlapping patterns on one
// connection: until the answer is in, it holds the events that match it.
// The answer gives head, the stream's position when the hub registered
// it: live events after head are its own, and the hub replays the events
// after since up to head marked with the pattern they are replayed for
// ("replay"). So it takes a replayed event of its own pattern, or a live
// one after head, when it is after the last it took; events without a
// position (a hub that gives none) as they come.
class Feed {
  active = true; // until unsubscribe, the client's close or a revocation
  error; // why it ended, unless by unsubscribe
  known = false; // its rpc.subscribe answer is in, on this connection
  head = 0; // the stream's position at that answer
  pos; // {epoch, seq} of the last event taken, or where it started; null: none
  #held = []; // {event} or {change}, until known
  #overflow = false; // it held too much, and dropped some
  #topics;

  constructor(topics, pattern, handler, shared, onPresence, since) {
    this.#topics = topics;
    this.pattern = pattern;
    this.handler = handler;
    this.shared = shared;
    shared.n++;
    this.onPresence = onPresence;
    this.pos = since ? { epoch: since.epoch, seq: since.seq } : null;
    this.sub = new Subscription(this);
  }

  position() {
    return this.active && this.pos?.epoch ? { epoch: this.pos.epoch, seq: this.pos.seq } : undefined;
  }

  unsubscribe() {
    return this.active ? this.#topics.drop(this) : Promise.resolve();
  }

  end(error) {
    if (this.active && error !== undefined) this.error = error;
    this.active = false;
  }

  // reset forgets the connection that was lost.
  reset() {
    this.known = false;
    this.#held = [];
    this.#overflow = false;
  }

  take(event, seen) {
    if (!this.known) this.#hold({ event });
    else this.#offer(event, seen);
  }

  presence(change) {
    if (!this.onPresence) return;
    if (!this.known) this.#hold({ change });
    else this.#notifyPresence(change);
  }

  // start takes in the answer to the rpc.subscribe made with since
  // (undefined: from now), then the events held meanwhile.
  start(res, since) {
    if (this.known || !this.active) return;
    this.known = true;
    // res null: started by a twin's answer, positions from its events.
    const epoch = typeof res?.epoch === "string" ? res.epoch : undefined;
    this.head = Number.isSafeInteger(res?.seq) ? res.seq : 0;
    let missed = this.#overflow;
    this.#overflow = false;
    if (epoch === undefined) {
      this.pos = null; // a hub that gives no positions
    } else if (!since) {
      this.pos = { epoch, seq: this.head };
    } else if (since.epoch !== epoch) {
      this.pos = { epoch, seq: 0 };
      missed = true;
    } else if (res.recovered !== true) {
      missed = true;
    }
    if (missed) this.#call(new MissedEvent(this.pattern.name, epoch, since ?? this.pos ?? undefined));
    const held = this.#held;
    this.#held = [];
    for (const h of held) {
      if (!this.active) return;
      if (h.event) this.#offer(h.event);
      else this.#notifyPresence(h.change);
    }
  }

  #hold(item) {
    if (this.#held.length < maxHeld) this.#held.push(item);
    else this.#overflow = true;
  }

  #offer(event, seen) {
    const seq = event.seq;
    const positioned = typeof seq === "number" && seq > 0;
    if (positioned) {
      if (seq <= (this.pos?.seq ?? 0) || (event.replay === undefined && seq <= this.head)) return;
      this.pos = { epoch: event.epoch, seq };
    }
    if (positioned && this.shared.n > 1) {
      if (!this.shared.first(event.epoch, seq)) return;
    } else {
      if (seen?.has(this.handler)) return;
      seen?.add(this.handler);
    }
    this.#call(event);
  }

  #call(event) {
    this.#run(this.handler, event, `subscriber of ${this.pattern.name}`);
  }

  #notifyPresence(change) {
    this.#run(this.onPresence, change, `presence of ${this.pattern.name}`);
  }

  // #run calls fn with arg as a method of this subscription; what it throws,
  // or the promise it returns rejects with, is reported as an error of
  // context.
  #run(fn, arg, context) {
    try {
      const r = fn.call(this, arg);
      if (typeof r?.then === "function") r.then(undefined, (err) => this.#topics.report(err, context));
    } catch (err) {
      this.#topics.report(err, context);
    }
  }
}
