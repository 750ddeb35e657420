package main

import (
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/switchboard-rpc/switchboard/internal/hubtest"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata from the demo hub")

// wantGolden runs "rpc gen-ts" or "rpc gen-py" (by golden's ending)
// against url and wants the golden file's text; with -update it rewrites
// the file first.
func wantGolden(t *testing.T, golden, url string) {
	t.Helper()
	cmd, test := "gen-ts", "TestGenTS"
	if strings.HasSuffix(golden, ".py") {
		cmd, test = "gen-py", "TestGenPy"
	}
	r := rpc(t, "", cmd, url)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if *update {
		if err := os.WriteFile(golden, []byte(r.stdout), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if r.stdout != string(want) {
		t.Errorf("%s output differs from %s (go test ./cmd/rpc -run %s -update rewrites it):\n%s", cmd, golden, test, r.stdout)
	}
}

// The demo's methods, typed. testdata/demo-api.d.ts is also compiled
// against switchboard.d.ts by web/test/types.test.js, so a change here
// that TypeScript rejects fails there.
func TestGenTS(t *testing.T) {
	h := hubtest.Start(t, nil)
	wantGolden(t, "testdata/demo-api.d.ts", h.WS())

	r := rpc(t, "", "gen-ts", "-name", "Demo", "-module", "./switchboard.js", h.HTTP())
	for _, want := range []string{`import type { Method, Params } from "./switchboard.js";`, "export interface Demo {"} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("gen-ts -name -module: exit %d, output lacks %q", r.code, want)
		}
	}
	if r := rpc(t, "", "gen-ts", "-name", "not-an-identifier", h.HTTP()); r.code != exitUsage {
		t.Errorf("bad -name: exit %d, want %d", r.code, exitUsage)
	}
}

func TestTSType(t *testing.T) {
	tests := []struct{ schema, want string }{
		{`{}`, "unknown"},
		{`{"type": "integer"}`, "number"},
		{`{"type": ["string", "null"]}`, "string | null"},
		{`{"enum": ["a", "b", 3]}`, `"a" | "b" | 3`},
		{`{"const": true}`, "true"},
		{`{"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "number"}]}}`, "(string | number)[]"},
		{`{"type": "array"}`, "unknown[]"},
		{`{"type": "object", "additionalProperties": {"type": "boolean"}}`, "{ [key: string]: boolean }"},
		{`{"type": "object"}`, "{ [key: string]: unknown }"},
		{`{"type": "object", "properties": {"b": {"type": "string"}, "a-b": {"type": "number"}}, "required": ["b"]}`, `{ "a-b"?: number; b: string }`},
		{`{"type": "object", "properties": {"x": {"type": "number", "description": "across"}}, "required": ["x"]}`, "{\n  /** across */\n  x: number;\n}"},
		{`{"$ref": "#/components/schemas/User.Name"}`, "User_Name"},
		{`{"allOf": [{"$ref": "#/components/schemas/A"}, {"type": "object", "properties": {"b": {"type": "string"}}}]}`, "A & { b?: string }"},
		{`{"type": "string", "format": "date-time"}`, "string"},
	}
	for _, tt := range tests {
		var s schema
		if err := json.Unmarshal([]byte(tt.schema), &s); err != nil {
			t.Fatal(err)
		}
		if got := tsType(s, ""); got != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.schema, got, tt.want)
		}
	}
}

func TestTSParams(t *testing.T) {
	num := schema{"type": "number"}
	tests := []struct {
		structure string
		params    []descriptor
		want      string
	}{
		{"either", nil, "undefined"},
		{"either", []descriptor{{Name: "a", Required: true, Schema: num}, {Name: "b", Schema: num}}, "[a: number, b?: number] | { a: number; b?: number }"},
		// An optional parameter before a required one cannot be left out by position.
		{"by-position", []descriptor{{Name: "a", Schema: num}, {Name: "b", Required: true, Schema: num}}, "[a: number, b: number]"},
		{"by-name", []descriptor{{Name: "a", Schema: num}}, "{ a?: number } | undefined"},
		{"either", []descriptor{{Name: "user-id", Required: true, Schema: num}, {Name: "x", Schema: num}}, `[number, number?] | { "user-id": number; x?: number }`},
		{"by-position", []descriptor{{Name: "params", Schema: num}}, "number[]"},
		{"by-name", []descriptor{{Name: "params", Schema: schema{"type": "object", "additionalProperties": num}}}, "{ [key: string]: number }"},
		{"either", []descriptor{{Name: "params", Schema: schema{}}}, "Params | undefined"},
	}
	for _, tt := range tests {
		if got := tsParams(tt.structure, tt.params); got != tt.want {
			t.Errorf("%s %+v:\n got %s\nwant %s", tt.structure, tt.params, got, tt.want)
		}
	}
}
