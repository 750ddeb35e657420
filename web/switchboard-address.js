// Addressed calls (rpc.call): the params a Client's callPeer sends, and
// the answers of a user's or a topic's peers as it gives them back.

import { RPCError } from "./switchboard-errors.js";

/**
 * addressParams returns the params of an rpc.call of method to the peers
 * that to names (a peer id, or {peer}, {user} or {topic}), and which kind
 * of address it is. timeout, in ms, also bounds the call at the hub, a
 * little before it passes at the caller.
 */
export function addressParams(to, method, params, timeout) {
  const address = typeof to === "string" ? { peer: to } : { ...to };
  const given = ["peer", "user", "topic"].filter((k) => address[k] !== undefined);
  if (given.length !== 1) {
    throw new TypeError("callPeer: want a peer id, or one of {peer}, {user}, {topic}");
  }
  const p = { [given[0]]: address[given[0]], method };
  if (params !== undefined) p.params = params;
  if (timeout > 0 && timeout < Infinity) p.timeout = Math.max(1, Math.floor(timeout * 0.95));
  return { params: p, kind: given[0] };
}

/**
 * peerAnswers turns the result of an rpc.call to several peers into one
 * entry per peer, {peer, result} or {peer, error} (an RPCError), with the
 * array's truncated, asked and unanswered.
 */
export function peerAnswers(res) {
  const answers = res.results.map((r) =>
    r.error ? { peer: r.peer, error: new RPCError(r.error.code, r.error.message, r.error.data) } : r,
  );
  // The hub answers in one message within its size limit, leaving out
  // the entries that do not fit: it then says so, and how many it asked.
  answers.truncated = res.truncated === true;
  answers.asked = answers.truncated ? res.asked : answers.length;
  answers.unanswered = res.incomplete === true && Array.isArray(res.unanswered) ? res.unanswered : [];
  return answers;
}
