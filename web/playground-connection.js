// The connection: which hub, with which token, its state in the header,
// and, when it fails, why. A token is kept (sessionStorage, per hub) only
// when the user ticks the box that asks for it, and the header then says
// so, with a Forget button.
import { Client } from "./switchboard.js";
import { $, app, ms } from "./playground-view.js";

const query = new URLSearchParams(location.search);

// hubURL is the WebSocket URL of the hub: ?hub=, or the /rpc of the hub
// that served the page.
export const hubURL = (() => {
  if (query.get("hub")) return query.get("hub");
  const u = new URL("rpc", location.href);
  u.protocol = u.protocol === "https:" ? "wss:" : "ws:";
  u.search = "";
  u.hash = "";
  return u.href;
})();

const tokenKey = `switchboard-token:${hubURL}`;
let token = query.get("token") ?? storage()?.getItem(tokenKey) ?? undefined;

// usesToken tells whether the page sends a token.
export const usesToken = () => token !== undefined;

// currentToken is the token the page connects with, or undefined.
export const currentToken = () => token;

function storage() {
  try {
    return sessionStorage;
  } catch {
    return undefined; // storage disabled
  }
}

// keep stores the token for this hub in this tab, or forgets it.
function keep(t) {
  if (t) storage()?.setItem(tokenKey, t);
  else storage()?.removeItem(tokenKey);
  showKept();
}

function showKept() {
  $("token-kept").hidden = !storage()?.getItem(tokenKey);
}

// connect replaces the client with a new one: app.onClient learns of it
// at once, app.onOpen each time it connects.
export function connect() {
  const old = app.client;
  old?.close(1000, "reconnecting");
  // bigNumbers: integers beyond 2^53 in results arrive exact, as BigInt.
  const c = new Client(hubURL, { token, trace: app.trace, callTimeout: 0, pingInterval: 20_000, bigNumbers: true });
  app.client = c;
  let opened = false;
  c.addEventListener("state", (e) => {
    if (c !== app.client) return;
    showState(e);
    if (e.state !== "open") return;
    // After a reconnection, or the first opening of a client that replaced
    // another (Reconnect), the page is a new peer.
    for (const fn of app.onOpen) fn(c, opened || old !== undefined);
    opened = true;
  });
  c.addEventListener("error", (e) => {
    e.preventDefault();
    // Answers without id come from raw messages; the raw box shows them.
    if (e.context !== "a response without id") app.note(`${e.context}: ${e.error?.message ?? e.error}`);
  });
  for (const fn of app.onClient) fn(c);
}

// unreachable is what the client's probe says when its fetch failed: the
// host did not answer, or (on another origin) refused the page's origin,
// which a browser hides from the page.
const unreachable = "the hub cannot be reached";

function showState(e) {
  const conn = $("conn");
  conn.dataset.state = e.state;
  $("conn-url").textContent = hubURL;
  const text = {
    connecting: e.attempt ? `connecting (attempt ${e.attempt + 1})…` : "connecting…",
    open: "connected",
    disconnected: `disconnected${e.code ? ` (${e.code})` : ""}`,
    closed: "closed",
  }[e.state];
  $("conn-text").textContent = text;
  const banner = $("banner");
  if (e.state === "open") {
    banner.hidden = true;
    $("token-form").hidden = !panelOpen;
    return;
  }
  if (e.state === "disconnected") {
    const why = e.reason || (e.code === 1006 ? "the connection failed" : "closed");
    const say = (reason) => ($("banner-text").textContent = `Not connected to ${hubURL}: ${reason}. Retrying in ${ms(e.delay)}; calls wait until then.`);
    say(why);
    delete banner.dataset.diagnosed;
    if (e.reason === unreachable) {
      const c = app.client;
      refusedOrigin().then((refused) => {
        if (c !== app.client || c.state === "open") return;
        if (refused && $("banner-text").textContent.includes(unreachable)) say(refused);
        banner.dataset.diagnosed = refused ? "origin" : "unreachable";
      });
    }
    const needsToken = /HTTP 401/.test(e.reason);
    if (needsToken) $("token-form").hidden = false;
    banner.hidden = false;
    if (needsToken && document.activeElement?.tagName !== "INPUT") $("token").focus();
  }
}

// refusedOrigin tells, when the hub is on another origin, whether it
// answers at all: the client's probe is a CORS request, which a hub that
// does not allow this page's origin refuses without the headers that
// would let the page read why, so the browser reports it as a network
// error. A no-cors request gets an opaque answer from a host that is up,
// and fails only when nothing answers. It resolves to the reason, or "".
export async function refusedOrigin(url = hubURL) {
  let target;
  try {
    target = new URL(url.replace(/^ws/, "http"));
  } catch {
    return "";
  }
  if (target.origin === location.origin) return "";
  try {
    await fetch(target, { mode: "no-cors", cache: "no-store", signal: AbortSignal.timeout(5000) });
  } catch {
    return "";
  }
  return `the hub answers, but does not allow pages from ${location.origin} to connect: start it with -origins ${location.host} (its log says "origin not allowed")`;
}

// ---- the connection panel ----

let panelOpen = false;

$("conn-toggle").addEventListener("click", () => {
  panelOpen = $("token-form").hidden;
  $("token-form").hidden = !panelOpen;
  $("conn-toggle").setAttribute("aria-expanded", String(panelOpen));
  if (panelOpen) $("hub-url").focus();
});
$("hub-url").value = hubURL;
$("token").value = token ?? "";
$("keep-token").checked = !!storage()?.getItem(tokenKey);

$("token-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const url = $("hub-url").value.trim();
  const t = $("token").value.trim() || undefined;
  if (url && url !== hubURL) {
    // Another hub: a new page, so that its link says which hub.
    const u = new URL(location.href);
    u.searchParams.set("hub", url);
    u.searchParams.delete("token");
    if ($("keep-token").checked && t) storage()?.setItem(`switchboard-token:${url}`, t);
    location.assign(u);
    return;
  }
  token = t;
  keep($("keep-token").checked ? t : undefined);
  connect();
});

// span writes a duration the way a person says it.
const span = (t) => (t < 60_000 ? `${Math.round(t / 1000)} s` : t < 5_400_000 ? `${Math.round(t / 60_000)} min` : t < 172_800_000 ? `${Math.round(t / 3_600_000)} h` : `${Math.round(t / 86_400_000)} days`);

// A JSON Web Token says whom it is for and until when: the panel shows
// it (read, not verified: the hub does that).
export function describeToken(t) {
  const parts = t.split(".");
  if (parts.length !== 3) return "";
  try {
    const b64 = parts[1].replace(/-/g, "+").replace(/_/g, "/");
    const claims = JSON.parse(atob(b64.padEnd(Math.ceil(b64.length / 4) * 4, "=")));
    const who = typeof claims.sub === "string" ? `for ${claims.sub}` : "without a subject";
    if (typeof claims.exp !== "number") return `A JSON Web Token ${who}, with no expiry.`;
    const left = claims.exp * 1000 - Date.now();
    return `A JSON Web Token ${who}, ${left > 0 ? `expiring in ${span(left)}` : `expired ${span(-left)} ago`} (${new Date(claims.exp * 1000).toLocaleString()}).`;
  } catch {
    return "";
  }
}
const showTokenInfo = () => ($("token-info").textContent = describeToken($("token").value.trim()));
$("token").addEventListener("input", showTokenInfo);
showTokenInfo();

$("forget-token").addEventListener("click", () => {
  keep(undefined);
  $("keep-token").checked = false;
  app.note("The token for this hub is forgotten: a reload will not use it. This connection keeps it until it ends.");
});

$("retry").addEventListener("click", connect);
$("reconnect").addEventListener("click", connect);
$("conn-url").textContent = hubURL;
showKept();
