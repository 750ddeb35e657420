// Topics: subscriptions with their events and positions, publishing,
// history, presence and the peers one may call.
import { matches, RPCError } from "./switchboard.js";
import { $, app, el, jsonView, parseParams, clock } from "./playground-view.js";

const subs = new Map(); // pattern -> {count, sub, chip}

// epoch is the name of the hub's event stream, as last seen: positions
// (seq) of another epoch mean nothing.
let epoch;
function seeEpoch(e) {
  if (typeof e !== "string" || e === epoch) return;
  epoch = e;
  $("history-epoch").value = e;
}

// position shows where an event is in the hub's stream.
const position = (ev) => (ev.seq !== undefined ? el("span", { class: "pos", title: `epoch ${ev.epoch}` }, `seq ${ev.seq}`) : null);

// restart is the restart the page last told of: its epoch, the topics it
// held back, the note that says so and the marker in the Events list.
let restart;

function onEvent(ev) {
  if (ev.missed) {
    // After a reconnection the hub could not replay everything: either it
    // restarted (a new epoch: it cannot know what came meanwhile), or it
    // no longer held the events.
    const restarted = ev.since?.epoch !== undefined && ev.since.epoch !== ev.epoch;
    seeEpoch(ev.epoch);
    if (!restarted) {
      app.note(`Events of ${ev.topic} were missed while disconnected: the hub no longer held them.`);
      return;
    }
    // One note and one marker per restart, whatever the count of
    // subscriptions that learn of it.
    if (restart?.epoch !== ev.epoch) {
      restart = { epoch: ev.epoch, topics: [] };
      restart.note = app.note("");
      restart.marker = el("li", { class: "marker", role: "separator" });
      $("events").querySelector(".empty")?.remove();
      $("events").prepend(restart.marker);
    }
    restart.topics.push(ev.topic);
    const topics = restart.topics.join(", ");
    restart.note.textContent = `The hub restarted (a new epoch), so it cannot say whether events of ${topics} were published while this page was disconnected.`;
    restart.marker.textContent = `The hub restarted: the events above are of epoch ${ev.epoch}, those below of the one before; what was published meanwhile (${topics}) is unknown.`;
    return;
  }
  seeEpoch(ev.epoch);
  const list = $("events");
  list.querySelector(".empty")?.remove();
  const by = [];
  for (const [pattern, s] of subs) {
    if (matches(pattern, ev.topic)) {
      s.count++;
      s.countEl.textContent = String(s.count);
      by.push(pattern);
    }
  }
  list.prepend(
    el(
      "li",
      { class: "entry" },
      el("div", { class: "entry-head" }, el("span", { class: "badge warn" }, "event"), el("span", { class: "name" }, ev.topic), position(ev), el("span", { class: "meta" }, `${clock()}${by.length > 0 ? ` · via ${by.join(", ")}` : ""}`)),
      jsonView(ev.data),
    ),
  );
  while (list.children.length > 50) list.lastElementChild.remove();
}

// resubscribe subscribes a new client to the patterns of the last.
export function resubscribe(c) {
  for (const [pattern, s] of subs) {
    s.sub = undefined;
    subscribeOn(c, pattern, s);
  }
  if (watched) watch(c, watched.topic);
}

async function subscribeOn(c, pattern, s) {
  try {
    s.sub = await c.subscribe(pattern, onEvent);
    s.chip.classList.remove("pending");
  } catch (err) {
    if (c !== app.client) return;
    subs.delete(pattern);
    s.chip.remove();
    app.note(`Subscribe to ${pattern} failed: ${err.message}`);
  }
}

$("subscribe-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const pattern = $("pattern").value.trim();
  if (!pattern) return;
  if (subs.has(pattern)) {
    $("publish-result").textContent = `Already subscribed to ${pattern}.`;
    return;
  }
  const countEl = el("span", { class: "count", title: "events received" }, "0");
  const s = { count: 0, countEl };
  s.chip = el(
    "li",
    { class: "chip pending" },
    el("code", {}, pattern),
    countEl,
    el(
      "button",
      {
        type: "button",
        "aria-label": `unsubscribe from ${pattern}`,
        title: "Unsubscribe",
        onclick: async () => {
          subs.delete(pattern);
          s.chip.remove();
          await s.sub?.unsubscribe().catch((err) => app.note(`Unsubscribe failed: ${err.message}`));
        },
      },
      "×",
    ),
  );
  subs.set(pattern, s);
  $("subs").append(s.chip);
  subscribeOn(app.client, pattern, s);
});

$("publish-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const out = $("publish-result");
  let data;
  try {
    const text = $("data").value.trim();
    data = text === "" ? null : parseParams(text);
  } catch (err) {
    out.textContent = `Data is not valid JSON: ${err.message}. Write strings in quotes: "hello".`;
    return;
  }
  const topic = $("topic").value.trim();
  const c = app.client;
  out.textContent = c.state === "open" ? `Publishing on ${topic}…` : `Not connected: the publish on ${topic} waits for the connection.`;
  try {
    const r = await c.call("rpc.publish", { topic, data });
    seeEpoch(r.epoch);
    const n = r.delivered;
    out.textContent = `Published on ${topic}${r.seq !== undefined ? ` at seq ${r.seq}` : ""}: reached ${n} peer${n === 1 ? "" : "s"}.`;
  } catch (err) {
    out.textContent = `Publish failed: ${err instanceof RPCError ? `${err.code} ${err.message}` : err.message}`;
  }
});


// ---- history ----

$("history-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const out = $("history-result");
  const topic = $("history-topic").value.trim();
  const limit = Number($("history-limit").value) || undefined;
  const seq = $("history-since").value.trim();
  const since = seq === "" ? undefined : { epoch: $("history-epoch").value.trim(), seq: Number(seq) };
  out.textContent = `Reading the history of ${topic}…`;
  try {
    const h = await app.client.history(topic, { limit, since });
    seeEpoch(h.epoch);
    // A position of another epoch means nothing to the hub: it answers
    // with all it holds.
    const other = since && since.epoch !== h.epoch;
    const after = !since ? "," : other ? `: since names another epoch (${since.epoch || "none"}) than the hub's, so these are all it holds,` : ` after seq ${since.seq},`;
    out.textContent = `${h.events.length} event${h.events.length === 1 ? "" : "s"} of ${topic}${after} oldest first; the stream is at seq ${h.seq} (epoch ${h.epoch})${h.truncated ? "; truncated to fit a message" : ""}.`;
    $("history").replaceChildren(
      ...h.events.map((ev) =>
        el(
          "li",
          { class: "entry" },
          el("div", { class: "entry-head" }, el("span", { class: "name" }, ev.topic), position(ev), el("button", { type: "button", class: "ghost small end", title: "Read only what came after this event", onclick: () => ($("history-since").value = String(ev.seq)) }, "since here")),
          jsonView(ev.data),
        ),
      ),
    );
  } catch (err) {
    out.textContent = `History failed: ${err instanceof RPCError ? `${err.code} ${err.message}` : err.message}`;
  }
});

// ---- peers ----

let watched; // {topic, sub}: the topic whose peers the panel shows
const peers = new Map(); // peer id -> {id, user}
export const me = { id: undefined }; // this page's peer id, once rpc.whoami said

// showPeers lists the peers of the watched topic, each with a button
// that puts an rpc.call addressed to it into the Request form.
export function showPeers() {
  const list = $("peers");
  if (peers.size === 0) {
    list.replaceChildren(el("li", { class: "empty" }, watched ? `No peer is on ${watched.topic}.` : "Watch a topic to see who is on it."));
    return;
  }
  list.replaceChildren(
    ...[...peers.values()].map((p) =>
      el(
        "li",
        { class: "entry peer", "data-peer": p.id },
        el(
          "div",
          { class: "entry-head" },
          el("code", { class: "name" }, p.id),
          p.user && el("span", { class: "meta" }, p.user),
          p.id === me.id && el("span", { class: "badge ok" }, "you"),
          el(
            "button",
            { type: "button", class: "small end", title: "Fill the Request form with an rpc.call to this peer", onclick: () => app.fill("rpc.call", { peer: p.id, method: $("peer-method").value.trim() || "whoami", params: {} }) },
            "Call this peer",
          ),
        ),
      ),
    ),
  );
}

function onPresence({ join, topic, peer }) {
  if (!watched || topic !== watched.topic || !peer?.id) return;
  if (join) peers.set(peer.id, peer);
  else peers.delete(peer.id);
  showPeers();
  $("presence-result").textContent = `${peer.user ?? peer.id} ${join ? "joined" : "left"} ${topic} at ${clock()}.`;
}

// watch subscribes to topic with presence, so that joins and leaves come
// live, then asks who is there already.
async function watch(c, topic) {
  const out = $("presence-result");
  const old = watched;
  watched = { topic };
  peers.clear();
  showPeers();
  out.textContent = `Watching ${topic}…`;
  try {
    if (old?.sub && old.sub.active) await old.sub.unsubscribe();
    watched.sub = await c.subscribe(topic, onEvent, { onPresence });
    for (const p of await c.presence(topic)) peers.set(p.id, p);
    showPeers();
    out.textContent = `${peers.size} peer${peers.size === 1 ? "" : "s"} on ${topic}, this page included; joins and leaves show as they happen.`;
  } catch (err) {
    if (c !== app.client) return;
    out.textContent = `Presence failed: ${err instanceof RPCError ? `${err.code} ${err.message}` : err.message}`;
  }
}

$("presence-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const topic = $("presence-topic").value.trim();
  if (topic) watch(app.client, topic);
});

$("whoami").addEventListener("click", async () => showMe(await app.call("rpc.whoami")));

// showMe shows rpc.whoami's answer r: this page's peer id.
function showMe(r) {
  if (typeof r?.id !== "string") return;
  me.id = r.id;
  $("me").textContent = `This page is peer ${r.id}${r.user ? ` (${r.user})` : ""}${r.node ? ` on node ${r.node}` : ""}.`;
  showPeers();
}

// reopened brings the Peers panel up to date once c has connected again:
// the page is a new peer, with a new id, and the joins and leaves of the
// outage never came.
export async function reopened(c) {
  try {
    if (me.id !== undefined) showMe(await c.call("rpc.whoami"));
    if (!watched) return;
    const topic = watched.topic;
    const now = await c.presence(topic);
    if (c !== app.client || watched?.topic !== topic) return;
    peers.clear();
    for (const p of now) peers.set(p.id, p);
    showPeers();
    $("presence-result").textContent = `Connected again at ${clock()}: ${peers.size} peer${peers.size === 1 ? "" : "s"} on ${topic}, this page included.`;
  } catch {
    // The connection dropped again: the next reconnection tries again.
  }
}
