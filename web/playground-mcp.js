// The Agents (MCP) panel: the hub's /mcp endpoint, the tools an agent
// with this page's identity sees there, and a client configuration to
// copy. The list is not computed here: the page opens an MCP session of
// its own (Streamable HTTP: initialize, then tools/list, with the page's
// token), so it is what the hub answers an agent, and keeps the session's
// stream open to be told (notifications/tools/list_changed) when a peer
// provides or withdraws a method. The session ends (DELETE) when the page
// connects again or goes away.
import { $, app, copyText, el } from "./playground-view.js";
import { hubURL, currentToken } from "./playground-connection.js";

// mcpURL is the hub's /mcp, beside the /rpc the page connects to.
export const mcpURL = (() => {
  try {
    const u = new URL(hubURL.replace(/^ws/, "http"));
    u.pathname = u.pathname.replace(/[^/]*$/, "mcp");
    u.search = "";
    u.hash = "";
    return u.href;
  } catch {
    return "";
  }
})();

const version = "2025-11-25"; // asked for; the hub may answer an older one
const retryDelay = 5000; // before a new session, when the stream ended

// messages reads the JSON-RPC messages of an answer: one JSON body, or
// server-sent events.
function messages(type, text) {
  if (!type.startsWith("text/event-stream")) return text.trim() === "" ? [] : [JSON.parse(text)];
  return events(text).events;
}

// events splits server-sent events off text: the data of each complete
// event parsed as JSON, and what is left of text after the last one.
function events(text) {
  const out = [];
  const parts = text.replace(/\r\n?/g, "\n").split("\n\n");
  const rest = parts.pop();
  for (const part of parts) {
    const data = part
      .split("\n")
      .filter((l) => l.startsWith("data:"))
      .map((l) => l.slice(5).replace(/^ /, ""))
      .join("\n");
    if (data !== "") out.push(JSON.parse(data));
  }
  return { events: out, rest };
}

// Session is one MCP session with the hub, as an agent would hold it.
class Session {
  id = "";
  protocol = version;
  #stream = new AbortController();
  #next = 1;

  headers(extra = {}) {
    const h = { Accept: "application/json, text/event-stream", ...extra };
    const t = currentToken();
    if (t) h.Authorization = `Bearer ${t}`;
    if (this.id) {
      h["Mcp-Session-Id"] = this.id;
      h["Mcp-Protocol-Version"] = this.protocol;
    }
    return h;
  }

  // post sends one message and resolves to the answer's result (for a
  // request) or undefined (a notification).
  async post(method, params, notification = false) {
    const msg = { jsonrpc: "2.0", method, ...(params !== undefined && { params }), ...(!notification && { id: this.#next++ }) };
    const res = await fetch(mcpURL, { method: "POST", headers: this.headers({ "Content-Type": "application/json" }), body: JSON.stringify(msg), cache: "no-store" });
    if (!res.ok) throw new HTTPError(res.status, (await res.text()).trim());
    if (notification) return undefined;
    const answer = messages(res.headers.get("Content-Type") ?? "", await res.text()).find((m) => m.id === msg.id);
    if (!answer) throw new Error(`no answer to ${method}`);
    if (answer.error) throw new Error(`${method}: ${answer.error.code} ${answer.error.message}`);
    if (method === "initialize") {
      this.id = res.headers.get("Mcp-Session-Id") ?? "";
      this.protocol = answer.result.protocolVersion ?? version;
    }
    return answer.result;
  }

  async open() {
    await this.post("initialize", { protocolVersion: version, capabilities: {}, clientInfo: { name: "switchboard-playground", version: "1" } });
    await this.post("notifications/initialized", undefined, true);
  }

  // listen opens the session's stream, calls onChange for each
  // notifications/tools/list_changed, and resolves once the stream is
  // open to a promise that settles when it ends.
  async listen(onChange) {
    const res = await fetch(mcpURL, { headers: this.headers({ Accept: "text/event-stream" }), signal: this.#stream.signal, cache: "no-store" });
    if (!res.ok || !res.body) throw new HTTPError(res.status, "");
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    const read = async () => {
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        const { events: got, rest } = events(buf + value);
        buf = rest;
        for (const m of got) if (m.method === "notifications/tools/list_changed") onChange();
      }
    };
    return { ended: read().catch(() => {}) };
  }

  async tools() {
    const all = [];
    let cursor;
    do {
      const r = await this.post("tools/list", cursor === undefined ? undefined : { cursor });
      all.push(...(r.tools ?? []));
      cursor = r.nextCursor;
    } while (cursor);
    return all;
  }

  // close ends the session; keepalive lets it go out as the page unloads.
  close() {
    this.#stream.abort();
    if (!this.id) return;
    fetch(mcpURL, { method: "DELETE", headers: this.headers(), keepalive: true }).catch(() => {});
  }
}

class HTTPError extends Error {
  constructor(status, text) {
    super(`HTTP ${status}${text ? `: ${text}` : ""}`);
    this.status = status;
  }
}

// ---- the panel ----

let current; // the Session shown
let retry = 0;

function say(text) {
  $("mcp-status").textContent = text;
}

// start replaces the session with a new one, with the page's token now.
async function start() {
  clearTimeout(retry);
  current?.close();
  const s = (current = new Session());
  showSnippet();
  if (!mcpURL) return say("The hub's URL is not one the page can reach /mcp beside.");
  try {
    await s.open();
    if (s !== current) return s.close();
    let listening = true;
    try {
      const { ended } = await s.listen(() => s === current && refresh(s));
      ended.then(() => {
        if (s !== current) return;
        // The session expired or the hub went away: a new one, a little later.
        retry = setTimeout(start, retryDelay);
      });
    } catch {
      listening = false; // the list still shows; Refresh reads it again
    }
    await refresh(s, listening);
  } catch (err) {
    if (s !== current) return;
    showTools(undefined);
    if (err.status === 404) say("This hub does not serve MCP: start it with -mcp (or -demo).");
    else if (err.status === 401 || err.status === 403) say(`The hub refused the page's MCP session (${err.message}): the token is needed, or does not allow it.`);
    else say(`MCP session failed: ${err.message}`);
  }
}

let told = true; // whether the session's stream tells changes
let reads = 0; // tools/list asked so far: only the latest answer shows

async function refresh(s, listening = told) {
  told = listening;
  const n0 = ++reads;
  try {
    const tools = await s.tools();
    if (s !== current || n0 !== reads) return;
    showTools(tools);
    const n = `${tools.length} tool${tools.length === 1 ? "" : "s"}`;
    say(
      `${n}, as tools/list answers an agent with this page's identity (${currentToken() ? "its token" : "no token"}): the page holds an MCP session of its own. ` +
        (told ? "Updated as peers provide and withdraw methods." : "The hub did not open the session's stream: Refresh to read the list again."),
    );
  } catch (err) {
    if (s === current && n0 === reads) say(`tools/list failed: ${err.message}`);
  }
}

function showTools(tools) {
  const list = $("mcp-tools");
  if (!tools) return list.replaceChildren();
  if (tools.length === 0) return list.replaceChildren(el("li", { class: "empty" }, "No tool: this identity may call no method the hub describes."));
  list.replaceChildren(
    ...tools.map((t) => {
      const props = Object.keys(t.inputSchema?.properties ?? {});
      const req = new Set(t.inputSchema?.required ?? []);
      return el(
        "li",
        { class: "entry", "data-tool": t.name },
        el(
          "div",
          { class: "entry-head" },
          el("button", { type: "button", class: "link name", title: "Put this method into the Request form", onclick: () => app.fill(t.name, undefined) }, t.name),
          el("span", { class: "meta" }, `{${props.map((p) => (req.has(p) ? p : p + "?")).join(", ")}}`),
        ),
        t.description && el("p", { class: "explain" }, t.description.split("\n")[0]),
      );
    }),
  );
}

// snippet is a client configuration in the common "mcpServers" shape.
// The token is never written into it: a client that expands environment
// variables reads it from $SWITCHBOARD_TOKEN.
export function snippet(url, token) {
  const server = { type: "http", url, ...(token && { headers: { Authorization: "Bearer ${SWITCHBOARD_TOKEN}" } }) };
  return JSON.stringify({ mcpServers: { switchboard: server } }, null, 2);
}

function showSnippet() {
  const token = !!currentToken();
  $("mcp-url").textContent = mcpURL;
  $("mcp-snippet").textContent = snippet(mcpURL, token);
  $("mcp-snippet-hint").textContent = token
    ? "${SWITCHBOARD_TOKEN} is read from the environment by clients that expand variables (Claude Code's .mcp.json does); for others, put the token there yourself. The page never writes it into the snippet."
    : "The page connects without a token, so an agent may too. With a token, add \"headers\": {\"Authorization\": \"Bearer …\"}.";
}

$("mcp-copy").addEventListener("click", () => copyText("mcp-snippet", "mcp-copied"));
$("mcp-refresh").addEventListener("click", () => (current?.id ? refresh(current) : start()));
// Each connection may carry another token: a new session for it.
app.onOpen.push(() => start());
addEventListener("pagehide", () => current?.close());
addEventListener("pageshow", (e) => e.persisted && app.client?.state === "open" && start());
showSnippet();
