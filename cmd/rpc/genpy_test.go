package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/switchboard-rpc/switchboard/internal/hubtest"
)

// The demo's methods as a typed Python module. testdata/demo_api.py is
// also checked with mypy --strict and used against a hub by the Python
// client's tests (make py-test), so a change here that Python rejects
// fails there.
func TestGenPy(t *testing.T) {
	h := hubtest.Start(t, nil)
	wantGolden(t, "testdata/demo_api.py", h.WS())

	r := rpc(t, "", "gen-py", "-name", "Demo", h.HTTP())
	if r.code != 0 || !strings.Contains(r.stdout, "\nclass Demo:\n") {
		t.Errorf("gen-py -name: exit %d, output lacks class Demo", r.code)
	}
	for _, bad := range []string{"not-an-identifier", "class"} {
		if r := rpc(t, "", "gen-py", "-name", bad, h.HTTP()); r.code != exitUsage {
			t.Errorf("-name %s: exit %d, want %d", bad, r.code, exitUsage)
		}
	}
}

func TestPyType(t *testing.T) {
	tests := []struct{ schema, want, classes string }{
		{`{}`, "Any", ""},
		{`{"type": "integer"}`, "int", ""},
		{`{"type": ["string", "null"]}`, "str | None", ""},
		{`{"enum": ["a", "b", 3]}`, `Literal["a", "b", 3]`, ""},
		{`{"const": true}`, "Literal[True]", ""},
		{`{"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "number"}]}}`, "list[str | float]", ""},
		{`{"type": "array"}`, "list[Any]", ""},
		{`{"type": "object", "additionalProperties": {"type": "boolean"}}`, "dict[str, bool]", ""},
		{`{"type": "object"}`, "dict[str, Any]", ""},
		{`{"$ref": "#/components/schemas/user.name"}`, "UserName", ""},
		{`{"type": "object", "properties": {"b": {"type": "string"}, "x": {"type": "number", "description": "across"}}, "required": ["b"]}`,
			"T", "class T(TypedDict):\n    b: str\n    x: NotRequired[float]\n    \"\"\"across\"\"\"\n"},
		{`{"type": "object", "properties": {"a-b": {"type": "number"}}, "required": ["a-b"]}`,
			"T", "T = TypedDict(\"T\", {\"a-b\": float})\n"},
	}
	for _, tt := range tests {
		var s schema
		if err := json.Unmarshal([]byte(tt.schema), &s); err != nil {
			t.Fatal(err)
		}
		g := &pyGen{names: map[string]bool{}}
		if got := g.typ(s, "T"); got != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.schema, got, tt.want)
		}
		if got := strings.Join(g.classes, ""); got != tt.classes {
			t.Errorf("%s: classes\n got %q\nwant %q", tt.schema, got, tt.classes)
		}
	}
}

func TestPyNames(t *testing.T) {
	for in, want := range map[string]string{"billing.charge": "billing_charge", "class": "class_", "2x": "_2x", "a-b": "a_b"} {
		if got := pyName(in); got != want {
			t.Errorf("pyName(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{"billing.charge": "BillingCharge", "get_data": "GetData", "9": "T9"} {
		if got := pyClassName(in); got != want {
			t.Errorf("pyClassName(%q) = %q, want %q", in, got, want)
		}
	}
}
