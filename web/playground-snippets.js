// What the playground writes for elsewhere: a request as a curl command,
// an rpc command line, a JavaScript or a Python program, and as a link
// that opens the playground with the request filled in. Pure functions of
// the request, without the page, so that Node tests them.

// json writes v as compact JSON, integers beyond 2^53 (BigInt, or kept as
// written: JSON.rawJSON) exact.
export function json(v) {
  if (typeof v === "bigint") return String(v);
  if (v !== null && typeof v === "object" && typeof JSON.isRawJSON === "function" && JSON.isRawJSON(v)) return v.rawJSON;
  if (Array.isArray(v)) return "[" + v.map(json).join(",") + "]";
  if (v !== null && typeof v === "object") return "{" + Object.entries(v).map(([k, x]) => JSON.stringify(k) + ":" + json(x)).join(",") + "}";
  return JSON.stringify(v) ?? "null";
}

// shell quotes s for a POSIX shell.
export const shell = (s) => (/^[\w@%+=:,./-]+$/.test(s) ? s : "'" + s.replaceAll("'", `'\\''`) + "'");

// httpURL is the URL a hub takes HTTP POSTs at: its WebSocket URL's.
export const httpURL = (ws) => ws.replace(/^ws(s?):/, "http$1:");

// tokenVar is the environment variable the snippets read a token from:
// a token never goes into a snippet.
export const tokenVar = "SWITCHBOARD_TOKEN";

// request is what the snippets are made of: {hub, method, params,
// notification, token}; params is a value (undefined: none), token says
// whether the hub needs one.

// curl writes the request as a curl command: one HTTP POST.
export function curl({ hub, method, params, notification, token }) {
  const body = `{"jsonrpc":"2.0","method":${JSON.stringify(method)}${params === undefined ? "" : `,"params":${json(params)}`}${notification ? "" : `,"id":1`}}`;
  const auth = token ? ` -H "Authorization: Bearer $${tokenVar}"` : "";
  return `curl -sS ${shell(httpURL(hub))} -H 'Content-Type: application/json'${auth} -d ${shell(body)}`;
}

// cli writes the request as an rpc command line (docs/cli.md).
export function cli({ hub, method, params, notification, token }) {
  const auth = token ? ` -token "$${tokenVar}"` : "";
  const args = params === undefined ? "" : " " + shell(json(params));
  return `rpc ${notification ? "notify" : "call"}${auth} ${shell(hub)} ${shell(method)}${args}`;
}

// jsLiteral writes v as a JavaScript expression: JSON, with BigInt for
// the integers beyond 2^53.
function jsLiteral(v) {
  if (typeof v === "bigint") return `${v}n`;
  if (v !== null && typeof v === "object" && typeof JSON.isRawJSON === "function" && JSON.isRawJSON(v)) return /^-?\d+$/.test(v.rawJSON) ? `${v.rawJSON}n` : v.rawJSON;
  if (Array.isArray(v)) return "[" + v.map(jsLiteral).join(", ") + "]";
  if (v !== null && typeof v === "object") return "{ " + Object.entries(v).map(([k, x]) => (/^[A-Za-z_$][\w$]*$/.test(k) ? k : JSON.stringify(k)) + ": " + jsLiteral(x)).join(", ") + " }";
  return JSON.stringify(v) ?? "undefined";
}

const hasBig = (v) => typeof v === "bigint" || (v !== null && typeof v === "object" && Object.values(v).some(hasBig));

// js writes the request as a module using the JavaScript client, imported
// from the hub itself (in Node.js: from "@switchboard-rpc/client").
export function js({ hub, method, params, notification, token }) {
  const opts = [token && `token: process.env.${tokenVar}`, hasBig(params) && "bigNumbers: true"].filter(Boolean);
  const args = [JSON.stringify(method), params === undefined ? undefined : jsLiteral(params)].filter((a) => a !== undefined).join(", ");
  const module = new URL("switchboard.js", httpURL(hub)).href;
  return [
    `import { connect } from ${JSON.stringify(module)}; // Node.js: "@switchboard-rpc/client"`,
    ``,
    `const rpc = await connect(${JSON.stringify(hub)}${opts.length ? `, { ${opts.join(", ")} }` : ""});`,
    notification ? `await rpc.notify(${args});` : `console.log(await rpc.call(${args}));`,
    `rpc.close();`,
  ].join("\n");
}

// pyLiteral writes v as a Python expression.
function pyLiteral(v) {
  if (typeof v === "bigint") return String(v);
  if (v !== null && typeof v === "object" && typeof JSON.isRawJSON === "function" && JSON.isRawJSON(v)) return v.rawJSON;
  if (v === null || v === undefined) return "None";
  if (v === true) return "True";
  if (v === false) return "False";
  if (Array.isArray(v)) return "[" + v.map(pyLiteral).join(", ") + "]";
  if (typeof v === "object") return "{" + Object.entries(v).map(([k, x]) => JSON.stringify(k) + ": " + pyLiteral(x)).join(", ") + "}";
  return JSON.stringify(v);
}

// python writes the request as a program using the Python client,
// switchboard (docs/python.md).
export function python({ hub, method, params, notification, token }) {
  const args = [JSON.stringify(method), params === undefined ? undefined : pyLiteral(params)].filter((a) => a !== undefined).join(", ");
  return [
    `import asyncio${token ? "\nimport os" : ""}`,
    ``,
    `import switchboard`,
    ``,
    ``,
    `async def main() -> None:`,
    `    async with switchboard.connect(${JSON.stringify(hub)}${token ? `, token=os.environ[${JSON.stringify(tokenVar)}]` : ""}) as c:`,
    notification ? `        await c.notify(${args})` : `        print(await c.call(${args}))`,
    ``,
    ``,
    `asyncio.run(main())`,
  ].join("\n");
}

export const formats = { curl, cli, js, python };

// shareLink makes a link to the playground at page (its URL, without
// fragment) with a request filled in: the method and the params as
// typed, in the fragment, which never reaches a server. The hub is the
// page's own ?hub=, if any.
export function shareLink(page, { method, params, raw }) {
  const u = new URL(page);
  u.hash = "";
  u.searchParams.delete("token"); // a token is never shared
  const f = new URLSearchParams();
  if (raw !== undefined) f.set("raw", raw);
  else {
    f.set("method", method);
    if (params) f.set("params", params);
  }
  return u.href + "#" + f.toString();
}

// readLink reads what shareLink put in a fragment: {method, params} or
// {raw}, or undefined.
export function readLink(hash) {
  const f = new URLSearchParams(hash.replace(/^#/, ""));
  if (f.has("raw")) return { raw: f.get("raw") };
  if (f.has("method")) return { method: f.get("method"), params: f.get("params") ?? "" };
  return undefined;
}
