// The playground's snippets: what "Copy as" and "Link to this request"
// write, without a page.
import { test } from "node:test";
import assert from "node:assert/strict";
import { curl, cli, js, python, json, shell, shareLink, readLink } from "../playground-snippets.js";

const hub = "ws://127.0.0.1:8080/rpc";

test("json keeps integers beyond 2^53 as written", () => {
  assert.equal(json([12345678901234567890n, { a: null, "b c": "x" }]), '[12345678901234567890,{"a":null,"b c":"x"}]');
});

test("shell quotes what a shell would change", () => {
  assert.equal(shell("ws://127.0.0.1:8080/rpc"), "ws://127.0.0.1:8080/rpc");
  assert.equal(shell(`{"a":"it's"}`), `'{"a":"it'\\''s"}'`);
});

test("curl posts the request to the hub's HTTP URL", () => {
  assert.equal(
    curl({ hub, method: "add", params: [1, 2] }),
    `curl -sS http://127.0.0.1:8080/rpc -H 'Content-Type: application/json' -d '{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}'`,
  );
  assert.equal(
    curl({ hub: "wss://hub.example/rpc", method: "update", notification: true, token: true }),
    `curl -sS https://hub.example/rpc -H 'Content-Type: application/json' -H "Authorization: Bearer $SWITCHBOARD_TOKEN" -d '{"jsonrpc":"2.0","method":"update"}'`,
  );
});

test("cli writes an rpc command line", () => {
  assert.equal(cli({ hub, method: "subtract", params: { minuend: 42, subtrahend: 23 } }), `rpc call ws://127.0.0.1:8080/rpc subtract '{"minuend":42,"subtrahend":23}'`);
  assert.equal(cli({ hub, method: "get_data" }), "rpc call ws://127.0.0.1:8080/rpc get_data");
  assert.equal(cli({ hub, method: "update", params: [1], notification: true, token: true }), `rpc notify -token "$SWITCHBOARD_TOKEN" ws://127.0.0.1:8080/rpc update '[1]'`);
});

test("js imports the client from the hub and calls", () => {
  const text = js({ hub, method: "echo", params: [12345678901234567890n, { "a-b": true }], token: true });
  assert.match(text, /^import \{ connect \} from "http:\/\/127\.0\.0\.1:8080\/switchboard\.js";/);
  assert.match(text, /connect\("ws:\/\/127\.0\.0\.1:8080\/rpc", \{ token: process\.env\.SWITCHBOARD_TOKEN, bigNumbers: true \}\)/);
  assert.match(text, /rpc\.call\("echo", \[12345678901234567890n, \{ "a-b": true \}\]\)/);
});

test("python uses the switchboard package", () => {
  const text = python({ hub, method: "echo", params: { a: [true, false, null], b: "x" } });
  assert.match(text, /async with switchboard\.connect\("ws:\/\/127\.0\.0\.1:8080\/rpc"\) as c:/);
  assert.match(text, /print\(await c\.call\("echo", \{"a": \[True, False, None\], "b": "x"\}\)\)/);
  assert.match(python({ hub, method: "update", notification: true, token: true }), /token=os\.environ\["SWITCHBOARD_TOKEN"\]\) as c:\n        await c\.notify\("update"\)/);
});

test("a link keeps the params as typed, and never a token", () => {
  const link = shareLink("http://127.0.0.1:8080/?hub=ws%3A%2F%2Fother%2Frpc&token=s3cret#old", { method: "echo", params: '[1, "a&b #c"]' });
  const u = new URL(link);
  assert.equal(u.searchParams.get("hub"), "ws://other/rpc");
  assert.equal(u.searchParams.get("token"), null);
  assert.deepEqual(readLink(u.hash), { method: "echo", params: '[1, "a&b #c"]' });
  assert.deepEqual(readLink(new URL(shareLink("http://h/", { raw: "[1,2" })).hash), { raw: "[1,2" });
  assert.equal(readLink(""), undefined);
});
