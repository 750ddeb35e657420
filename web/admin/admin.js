// The admin page: the admin API's listings (docs/operations.md), called
// every two seconds over one WebSocket to the operator's endpoint (/rpc of
// this listener), drawn as tables and charts. Rates (calls and events per
// second, each topic's events per second) are the differences of the
// counters between two refreshes. Everything shown is text nodes: names
// from peers never become markup.

const $ = (id) => document.getElementById(id);
const every = 2000; // ms between refreshes
const kept = 150; // samples in the charts: five minutes

let ws = null;
let nextId = 1;
const pending = new Map();
let timer = 0;
let user = "";
const samples = [];
const lastSeen = new Map(); // topic -> {published, t} at the previous refresh
const refusalsShown = 20;

function setStatus(text, up) {
  $("status").textContent = text;
  $("status").classList.toggle("up", up);
}

function base64url(s) {
  const bytes = new TextEncoder().encode(s);
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function call(method, params) {
  return new Promise((resolve, reject) => {
    if (!ws || ws.readyState !== WebSocket.OPEN) {
      reject(new Error("not connected"));
      return;
    }
    const id = nextId++;
    pending.set(id, { resolve, reject });
    ws.send(JSON.stringify({ jsonrpc: "2.0", method, params, id }));
  });
}

function connect(token) {
  if (ws) ws.close(1000);
  const url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/rpc";
  const protocols = ["switchboard"];
  if (token) protocols.push("switchboard.bearer." + base64url(token));
  const sock = new WebSocket(url, protocols);
  ws = sock;
  setStatus("connecting", false);
  sock.onopen = () => {
    setStatus("live", true);
    refresh();
    clearInterval(timer);
    timer = setInterval(refresh, every);
  };
  sock.onclose = (e) => {
    if (ws !== sock) return;
    clearInterval(timer);
    ws = null;
    setStatus(e.code === 1006 ? "refused or unreachable (is the token right?)" : `closed ${e.code} ${e.reason}`, false);
    for (const p of pending.values()) p.reject(new Error("connection closed"));
    pending.clear();
  };
  sock.onmessage = (e) => {
    let m;
    try {
      m = JSON.parse(e.data);
    } catch {
      return;
    }
    const p = m.id != null && pending.get(m.id);
    if (!p) return; // events and notifications: the page subscribes to none
    pending.delete(m.id);
    if (m.error) p.reject(new Error(`${m.error.code} ${m.error.message}`));
    else p.resolve(m.result);
  };
}

function cell(tr, text, cls) {
  const td = document.createElement("td");
  td.textContent = text;
  if (cls) td.className = cls;
  tr.append(td);
  return td;
}

function fill(table, rows, render) {
  const body = $(table).tBodies[0];
  const trs = rows.map((r) => {
    const tr = document.createElement("tr");
    render(tr, r);
    return tr;
  });
  body.replaceChildren(...trs);
}

function bytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1 << 20) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / (1 << 20)).toFixed(1)} MiB`;
}

function chart(id, values) {
  const svg = $(id);
  const max = Math.max(1, ...values);
  const n = Math.max(values.length - 1, 1);
  const points = values.map((v, i) => `${((i / n) * 300).toFixed(1)},${(58 - (v / max) * 56).toFixed(1)}`).join(" ");
  const line = document.createElementNS("http://www.w3.org/2000/svg", "polyline");
  line.setAttribute("points", points);
  svg.replaceChildren(line);
}

async function kick(peer) {
  try {
    const res = await call("admin.disconnect", { peer, reason: "disconnected by an operator" });
    if (res.unanswered) setStatus(`kick: no answer from ${res.unanswered.join(", ")}; the peer may still be there`, true);
  } catch (err) {
    setStatus(`kick failed: ${err.message}`, true);
  }
  refresh();
}

let refreshing = false;
async function refresh() {
  if (refreshing || !ws) return;
  refreshing = true;
  try {
    const query = { limit: 100 };
    if (user) query.user = user;
    const [info, peers, topics, providers, refusals] = await Promise.all([
      call("admin.info", {}),
      call("admin.peers", query),
      call("admin.topics", { limit: 100 }),
      call("admin.providers", {}),
      call("admin.refusals", { limit: refusalsShown }),
    ]);
    showInfo(info);
    fill("peers", peers.peers, (tr, p) => {
      tr.dataset.peer = p.id;
      cell(tr, p.id, "id");
      cell(tr, p.user || "");
      cell(tr, p.remote || "");
      cell(tr, p.node || "");
      cell(tr, p.topics.join(" "));
      cell(tr, p.methods.join(" "));
      cell(tr, String(p.in_flight));
      const b = document.createElement("button");
      b.className = "kick";
      b.textContent = "Kick";
      b.title = `disconnect ${p.id}`;
      b.addEventListener("click", () => kick(p.id));
      cell(tr, "").append(b);
    });
    // A node that did not answer in time is named, its part missing.
    const silent = [...new Set([info, peers, topics, providers, refusals].flatMap((r) => r.unanswered || []))];
    $("more").textContent = [
      peers.next ? "More peers than shown: search by user to narrow." : "",
      silent.length ? `No answer in time from ${silent.join(", ")}: what they hold is missing.` : "",
    ].filter(Boolean).join(" ");
    showTopics(topics.topics);
    fill("providers", providers.providers, (tr, p) => {
      cell(tr, p.peer, "id");
      cell(tr, p.user || "");
      cell(tr, p.node || "");
      cell(tr, p.methods.join(" "));
      cell(tr, String(p.in_flight));
    });
    fill("refusals", refusals.refusals, (tr, r) => {
      tr.dataset.kind = r.kind;
      cell(tr, new Date(r.time).toLocaleTimeString());
      cell(tr, r.node || "");
      cell(tr, r.kind);
      cell(tr, r.reason + (r.status ? ` ${r.status}` : ""));
      cell(tr, r.identity || "");
      cell(tr, r.remote || "");
      cell(tr, [r.action, r.target].filter(Boolean).join(" "));
      cell(tr, r.error || "", "error");
    });
  } catch (err) {
    if (ws) setStatus(`error: ${err.message}`, true);
  } finally {
    refreshing = false;
  }
}

// showTopics ranks the topics by their events per second since the last
// refresh (from each topic's published count), then by subscribers.
function showTopics(topics) {
  const now = Date.now();
  const seen = new Set();
  for (const t of topics) {
    const prev = lastSeen.get(t.topic);
    // A count that went down started again (the history forgot the topic).
    const n = prev ? (t.published >= prev.published ? t.published - prev.published : t.published) : 0;
    t.rate = prev && now > prev.t ? (n * 1000) / (now - prev.t) : 0;
    lastSeen.set(t.topic, { published: t.published, t: now });
    seen.add(t.topic);
  }
  for (const name of lastSeen.keys()) if (!seen.has(name)) lastSeen.delete(name);
  topics.sort((a, b) => b.rate - a.rate || b.subscribers - a.subscribers || a.topic.localeCompare(b.topic));
  fill("topics", topics, (tr, t) => {
    tr.dataset.topic = t.topic;
    if (t.rate > 0) tr.className = "hot";
    cell(tr, t.topic);
    cell(tr, t.rate > 0 ? t.rate.toFixed(1) : "", "rate");
    cell(tr, String(t.subscribers));
    cell(tr, `${t.history} (${bytes(t.history_bytes)})`);
    cell(tr, t.last ? String(t.last) : "");
  });
}

function showInfo(info) {
  const up = Math.round(info.uptime_seconds);
  $("hubinfo").textContent = `${info.node ? info.node + " · " : ""}${info.version} · up ${Math.floor(up / 3600)}h ${Math.floor(up / 60) % 60}m ${up % 60}s · ${info.nodes.length} node${info.nodes.length === 1 ? "" : "s"}`;
  fill("nodes", info.nodes, (tr, n) => {
    cell(tr, n.node || "(alone)");
    cell(tr, String(n.peers));
    cell(tr, String(n.subscriptions));
    cell(tr, String(n.in_flight));
    cell(tr, bytes(n.queued_bytes));
    cell(tr, String(n.published));
    cell(tr, String(n.calls));
    cell(tr, n.linked ? "yes" : "no");
  });
  const now = Date.now();
  const sum = (key) => info.nodes.reduce((s, n) => s + n[key], 0);
  const conns = sum("peers");
  const published = sum("published");
  const calls = sum("calls");
  const prev = samples[samples.length - 1];
  const per = (v, was) => (prev && now > prev.t ? Math.max(0, ((v - was) * 1000) / (now - prev.t)) : 0);
  const rate = per(published, prev?.published);
  const callRate = per(calls, prev?.calls);
  samples.push({ t: now, conns, published, rate, calls, callRate });
  if (samples.length > kept) samples.shift();
  $("conns").textContent = String(conns);
  $("rate").textContent = rate.toFixed(1);
  $("calls").textContent = callRate.toFixed(1);
  chart("chart-conns", samples.map((s) => s.conns));
  chart("chart-calls", samples.map((s) => s.callRate));
  chart("chart-rate", samples.map((s) => s.rate));
}

$("login").addEventListener("submit", (e) => {
  e.preventDefault();
  const token = $("token").value;
  sessionStorage.setItem("switchboard-admin-token", token);
  connect(token);
});

$("search").addEventListener("submit", (e) => {
  e.preventDefault();
  user = $("user").value.trim();
  refresh();
});

const saved = sessionStorage.getItem("switchboard-admin-token");
if (saved !== null) {
  $("token").value = saved;
  connect(saved);
}
