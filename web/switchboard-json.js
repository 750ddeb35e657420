// switchboard-json.js: the JSON of the wire. Integers beyond 2^53 are
// read as BigInt (options.bigNumbers) and written as numbers; the number
// id of a request is echoed as it was written, even where JSON.parse
// rounds it. Part of switchboard.js.

import { ErrorCode, RPCError } from "./switchboard-errors.js";

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

// checkRequest says what is wrong with a request to send, if anything.
export function checkRequest(r) {
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
export function encode(v) {
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

export function encodeId(id) {
  return id !== null && typeof id === "object" ? id.raw : encode(id);
}

// response encodes a response to a request with id ({raw} for a number id
// kept as it was written). A result or error data that JSON cannot carry
// (a cycle, a function) becomes an internal error.
export function response(id, body) {
  let rest;
  try {
    rest = "error" in body ? `"error":${encode(body.error)}` : `"result":${encode(body.result)}`;
  } catch (err) {
    rest = `"error":${encode({ code: ErrorCode.InternalError, message: `Internal error: the answer cannot be sent as JSON: ${err.message}` })}`;
  }
  return `{"jsonrpc":"2.0",${rest},"id":${encodeId(id)}}`;
}

export function wireError(err, aborted) {
  if (err instanceof RPCError && Number.isInteger(err.code)) {
    const e = { code: err.code, message: String(err.message) };
    if (err.data !== undefined) e.data = err.data;
    return e;
  }
  if (aborted) return { code: ErrorCode.Cancelled, message: "Request cancelled" };
  return { code: ErrorCode.Application, message: String(err?.message ?? err) };
}

// runKey identifies a request being served, for rpc.cancel.
export function bigReviver(_key, value, context) {
  if (typeof value === "number" && !Number.isSafeInteger(value) && /^-?\d+$/.test(context?.source ?? "")) {
    return BigInt(context.source);
  }
  return value;
}

// numberIdSources returns the source text of the number "id" member of
// the message (batch false) or of each element of the batch, by index.
export function numberIdSources(text, batch) {
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

