// Checks switchboard.d.ts against the module itself: the values it exports
// (classes, functions, constants) and the public members of each exported
// class (fields, getters, methods) are the ones the declarations name, no
// more and no fewer. The declarations are read with the TypeScript compiler
// API; the module's members from real instances.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import ts from "typescript";
import * as sb from "../switchboard.js";
import { open, reply } from "./fakews.js";

// declarations reads the exported values of the .d.ts and, for each
// class, the names of its members with those of its bases in the file,
// and the name of its root base (Error, Event, EventTarget) if any.
function declarations() {
  const url = new URL("../switchboard.d.ts", import.meta.url);
  const file = ts.createSourceFile("switchboard.d.ts", readFileSync(url, "utf8"), ts.ScriptTarget.Latest);
  const values = new Set();
  const classes = new Map(); // name -> {base, own: Set}
  const exported = (s) => s.modifiers?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
  for (const s of file.statements) {
    if (!exported(s)) continue;
    if (ts.isVariableStatement(s)) {
      for (const d of s.declarationList.declarations) values.add(d.name.getText(file));
    } else if (ts.isFunctionDeclaration(s)) {
      values.add(s.name.text);
    } else if (ts.isClassDeclaration(s)) {
      values.add(s.name.text);
      const ext = s.heritageClauses?.find((h) => h.token === ts.SyntaxKind.ExtendsKeyword);
      const own = new Set();
      for (const m of s.members) {
        if (ts.isConstructorDeclaration(m) || !m.name) continue;
        own.add(m.name.getText(file));
      }
      classes.set(s.name.text, { base: ext?.types[0].expression.getText(file), own });
    }
  }
  const members = (name) => {
    const c = classes.get(name);
    if (!c) return { root: name, names: new Set() };
    const up = members(c.base);
    return { root: up.root, names: new Set([...up.names, ...c.own]) };
  };
  return { values, classes: new Map([...classes.keys()].map((n) => [n, members(n)])) };
}

// builtinNames are the names an instance of a built-in base has without
// the module's help: its own fields and those of its prototypes.
function builtinNames(root) {
  const make = { Error: () => new Error("m", { cause: 1 }), Event: () => new Event("x"), EventTarget: () => new EventTarget() }[root];
  const names = new Set(["constructor"]);
  if (!make) return names;
  for (let o = make(); o !== null; o = Object.getPrototypeOf(o)) for (const k of Object.getOwnPropertyNames(o)) names.add(k);
  return names;
}

// publicNames lists the members of an instance that its class and the
// module's classes above it define: its own fields and the methods and
// getters of its prototypes, up to a built-in one.
function publicNames(instance) {
  const names = new Set(Object.keys(instance));
  for (let p = Object.getPrototypeOf(instance); p !== null; p = Object.getPrototypeOf(p)) {
    if ([Error.prototype, Event.prototype, EventTarget.prototype, Object.prototype].includes(p)) break;
    for (const k of Object.getOwnPropertyNames(p)) names.add(k);
  }
  return names;
}

// instances makes one instance of each exported class, with every
// optional field given, some through a client talking to a fake hub.
async function instances(t) {
  const { client, peer } = await open(t, "ws://hub.test/rpc");
  const subscribing = client.subscribe("news.*", () => {});
  await reply(peer, { epoch: "e1", seq: 0 });
  const providing = client.provide("page.ask", () => {});
  await reply(peer, { ok: true });
  return {
    RPCError: new sb.RPCError(1, "m", { d: 1 }),
    ConnectionError: new sb.ConnectionError("m", { closeCode: 4000, closeReason: "r" }),
    DisconnectedError: new sb.DisconnectedError("m", { closeCode: 4000, closeReason: "r" }),
    ConnectionLostError: new sb.ConnectionLostError("m", { closeCode: 4000, closeReason: "r" }),
    ClosedError: new sb.ClosedError("m", { closeCode: 4000, closeReason: "r" }),
    TimeoutError: new sb.TimeoutError("m", 1),
    RevokedError: new sb.RevokedError("t"),
    RevokedEvent: new sb.RevokedEvent({ topics: ["t"], methods: ["m"] }),
    StateEvent: new sb.StateEvent("open"),
    ClientErrorEvent: new sb.ClientErrorEvent(new Error("m"), "c"),
    MissedEvent: new sb.MissedEvent("t", "e", { epoch: "e", seq: 1 }),
    Subscription: await subscribing,
    Provision: await providing,
    Client: client,
  };
}

const sorted = (set) => [...set].sort();

test("switchboard.d.ts declares exactly the module's exports", () => {
  const { values } = declarations();
  assert.deepEqual(sorted(values), sorted(Object.keys(sb)), "exported values: the .d.ts (actual) and switchboard.js (expected) differ");
});

test("switchboard.d.ts declares exactly the public members of each class", async (t) => {
  const { classes } = declarations();
  const made = await instances(t);
  assert.deepEqual(sorted(Object.keys(made)), sorted(classes.keys()), "the test makes an instance of each declared class");
  for (const [name, { root, names }] of classes) {
    assert.equal(made[name].constructor, sb[name], `the instance of ${name}`);
    const skip = builtinNames(root);
    const declared = sorted([...names].filter((n) => !skip.has(n)));
    const real = sorted([...publicNames(made[name])].filter((n) => !skip.has(n)));
    assert.deepEqual(declared, real, `members of ${name}: the .d.ts (actual) and switchboard.js (expected) differ`);
  }
});
