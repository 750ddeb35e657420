// Compiles test/types/usage.ts against switchboard.d.ts with TypeScript:
// the declarations type what the client does, and a typed API (as
// `rpc gen-ts` writes) rejects calls that do not fit it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const web = fileURLToPath(new URL("..", import.meta.url));
const tsc = fileURLToPath(new URL("../node_modules/typescript/bin/tsc", import.meta.url));

test("switchboard.d.ts and a generated API type-check", { timeout: 120_000 }, async () => {
  assert.ok(existsSync(tsc), "TypeScript is missing: run `npm ci` in web/");
  const out = await new Promise((resolve) => {
    execFile(process.execPath, [tsc, "-p", "test/types/tsconfig.json"], { cwd: web }, (err, stdout, stderr) =>
      resolve({ code: err ? err.code : 0, text: stdout + stderr }),
    );
  });
  assert.equal(out.code, 0, out.text);
});
