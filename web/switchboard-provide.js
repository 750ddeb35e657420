// switchboard-provide.js: the methods a client provides to the other peers
// of the hub (rpc.provide), which call them through it. Part of
// switchboard.js.

import { ConnectionError } from "./switchboard-errors.js";
import { matches } from "./switchboard-topics.js";

const isPattern = (method) => /(^|\.)[*>](\.|$)/.test(method);

/** Provision is a method, or a pattern of methods, that the client
 * provides to the other peers of the hub (Client.provide). */
export class Provision {
  #provided;

  constructor(provided, method, handler, description, params) {
    this.#provided = provided;
    this.method = method;
    this.handler = handler;
    this.description = description;
    this.params = params;
  }

  /** withdraw tells the hub to stop forwarding the method's calls
   * (rpc.unprovide) and resolves once it has answered; then the handler
   * stops serving. While the client is disconnected there is nothing to
   * tell: the method is simply not provided again. */
  withdraw() {
    return this.#provided.withdraw(this);
  }
}

// Provided is what a client provides: method or pattern -> Provision. It
// calls the hub with call(method, params, options), the client's.
export class Provided {
  #map = new Map();
  #withdrawing = new Map(); // method -> the withdrawal under way
  #call;

  constructor(call) {
    this.#call = call;
  }

  // add provides method and resolves to its Provision once the hub has
  // accepted: Client.provide. A withdrawal of the same method still under
  // way ends first, so that a method can be provided again straight
  // after withdraw() without waiting for it.
  async add(method, handler, options, description, params) {
    await this.#withdrawing.get(method)?.catch(() => {});
    if (this.#map.has(method)) throw new TypeError(`provide: ${method} is provided already`);
    const prov = new Provision(this, method, handler, description, params);
    // Registered before the hub is told, so that the first call it
    // forwards finds the handler.
    this.#map.set(method, prov);
    try {
      await this.#call("rpc.provide", { methods: [method] }, options);
    } catch (err) {
      if (this.#map.get(method) === prov) this.#map.delete(method);
      throw err;
    }
    return prov;
  }

  // withdraw takes back a provision: rpc.unprovide, then its handler
  // stops serving.
  async withdraw(prov) {
    if (this.#map.get(prov.method) !== prov) return;
    const done = this.#unprovide(prov);
    this.#withdrawing.set(prov.method, done);
    try {
      await done;
    } finally {
      if (this.#withdrawing.get(prov.method) === done) this.#withdrawing.delete(prov.method);
    }
  }

  async #unprovide(prov) {
    try {
      await this.#call("rpc.unprovide", { methods: [prov.method] }, { failFast: true });
    } catch (err) {
      // The hub forgets what a connection provided with it.
      if (!(err instanceof ConnectionError)) throw err;
    } finally {
      if (this.#map.get(prov.method) === prov) this.#map.delete(prov.method);
    }
  }

  // handlerOf finds the handler of a provided method: by name, else the
  // first pattern (in sorted order) that matches.
  handlerOf(method) {
    if (this.#map.size === 0 || method.startsWith("rpc.")) return undefined;
    const exact = this.#map.get(method);
    if (exact) return exact.handler;
    const patterns = [...this.#map.keys()].filter(isPattern).sort();
    for (const k of patterns) if (matches(k, method)) return this.#map.get(k).handler;
    return undefined;
  }

  // names lists the provided methods that are not patterns.
  names() {
    return [...this.#map.keys()].filter((k) => !isPattern(k));
  }

  // describe returns the OpenRPC method object of a provided name, for
  // rpc.discover: with its description and its params' schema when
  // provide() was given them, else taking any params.
  describe(name) {
    const prov = this.#map.get(name);
    const m = { name };
    if (prov?.description) m.description = prov.description;
    const schema = prov?.params;
    if (schema) {
      const required = new Set(Array.isArray(schema.required) ? schema.required : []);
      m.paramStructure = "by-name";
      m.params = Object.keys(schema.properties ?? {})
        .sort()
        .map((p) => {
          const d = { name: p, schema: schema.properties[p] };
          if (required.has(p)) d.required = true;
          return d;
        });
    } else {
      m.paramStructure = "either";
      m.params = [{ name: "params", schema: {} }];
    }
    m.result = { name: "result", schema: {} };
    return m;
  }

  // resume is the rpc.provide that provides everything again on a new
  // connection, or undefined when nothing is provided.
  resume() {
    return this.#map.size > 0 ? { method: "rpc.provide", params: { methods: [...this.#map.keys()] } } : undefined;
  }

  // revoke drops the provisions of the methods the hub revoked: it
  // forwards their calls no more.
  revoke(methods) {
    for (const m of methods) this.#map.delete(m);
  }

  clear() {
    this.#map.clear();
  }
}
