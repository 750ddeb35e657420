// Interoperability of the hub's MCP endpoint with a client nobody here
// wrote: the official TypeScript SDK (@modelcontextprotocol/sdk) and its
// Streamable HTTP transport. A page's client (switchboard.js) provides a
// described method; the SDK's client lists it as a tool, calls it, and
// cancels a call, which reaches the page's handler.
//
// It needs a hub with /mcp at SWITCHBOARD_URL (http://host:port): the Go
// test integration/mcp TestTypeScriptSDK starts one and runs this file.
import { test } from "node:test";
import assert from "node:assert/strict";
import WebSocket from "ws";
import { Client as MCPClient } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { connect } from "../../switchboard.js";

const base = process.env.SWITCHBOARD_URL;

test("the TypeScript SDK lists and calls a tool a page provides", async (t) => {
  assert.ok(base, "SWITCHBOARD_URL: the URL of a hub with /mcp (go test ./integration/mcp -run TypeScript starts one)");

  const agent = new MCPClient({ name: "ts-sdk-interop", version: "1.0.0" });
  let listChanged;
  const changed = new Promise((resolve) => (listChanged = resolve));
  agent.setNotificationHandler(ToolListChangedNotificationSchema, () => listChanged());
  await agent.connect(new StreamableHTTPClientTransport(new URL("/mcp", base)));
  t.after(() => agent.close());
  assert.equal(agent.getServerVersion()?.name, "switchboard");
  assert.equal(agent.getServerCapabilities()?.tools?.listChanged, true);

  const page = await connect(base.replace(/^http/, "ws") + "/rpc", { WebSocket });
  t.after(() => page.close());
  let cancelled;
  const reachedPage = new Promise((resolve) => (cancelled = resolve));
  let started;
  const running = new Promise((resolve) => (started = resolve));
  await page.provide("page.summary", ({ words }) => ({ summary: `a page about MCP, in ${words} words` }), {
    description: "Summarizes the open page",
    params: { type: "object", properties: { words: { type: "integer", description: "At most this many" } }, required: ["words"] },
  });
  await page.provide("page.wait", (_params, { signal }) => {
    started();
    return new Promise((_, reject) =>
      signal.addEventListener("abort", () => {
        cancelled(signal.reason);
        reject(signal.reason);
      }),
    );
  });
  await changed; // notifications/tools/list_changed, on the SDK's GET stream

  const { tools } = await agent.listTools();
  const tool = tools.find((x) => x.name === "page.summary");
  assert.ok(tool, `page.summary in ${tools.map((x) => x.name)}`);
  assert.equal(tool.description, "Summarizes the open page");
  assert.deepEqual(tool.inputSchema, {
    type: "object",
    properties: { words: { type: "integer", description: "At most this many" } },
    required: ["words"],
  });
  assert.ok(!tools.some((x) => x.name.startsWith("rpc.")), "no rpc.* tool");

  const res = await agent.callTool({ name: "page.summary", arguments: { words: 5 } });
  assert.equal(res.isError, undefined);
  assert.deepEqual(res.structuredContent, { summary: "a page about MCP, in 5 words" });
  assert.deepEqual(JSON.parse(res.content[0].text), { summary: "a page about MCP, in 5 words" });

  // Cancelling: the SDK sends notifications/cancelled, the hub rpc.cancel.
  const abort = new AbortController();
  const call = agent.callTool({ name: "page.wait", arguments: {} }, undefined, { signal: abort.signal });
  await running;
  abort.abort(new Error("the agent gave up"));
  await assert.rejects(call);
  const reason = await reachedPage;
  assert.equal(reason?.code, -32002, `the page's handler aborted by rpc.cancel (${reason})`);

  const unknown = await agent.callTool({ name: "no.such" }).catch((e) => e);
  assert.equal(unknown.code, -32602, String(unknown));
});
