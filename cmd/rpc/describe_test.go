package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/switchboard-rpc/switchboard/internal/hubtest"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

const upperSchema = `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`

// discoveredMethod returns the method object of name in doc's methods.
func discoveredMethod(t *testing.T, doc []byte, name string) string {
	t.Helper()
	var d struct{ Methods []json.RawMessage }
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatalf("%v: %s", err, doc)
	}
	for _, raw := range d.Methods {
		var m struct{ Name string }
		if json.Unmarshal(raw, &m) == nil && m.Name == name {
			return string(raw)
		}
	}
	t.Fatalf("%s not in %s", name, doc)
	return ""
}

// rpc provide -describe -params: the hub's rpc.discover carries them.
func TestProvideDescribed(t *testing.T) {
	h := hubtest.Start(t, nil)
	_, _, lines := start(t, "provide", "-describe", "text.upper=Upper-cases text", "-params", "text.upper="+upperSchema,
		h.WS(), "text.upper=jq -r .text | tr a-z A-Z", "text.lower=tr A-Z a-z")
	waitLine(t, lines, "providing text.upper, text.lower")
	r := rpc(t, "", "discover", "-json", h.HTTP())
	if r.code != 0 {
		t.Fatalf("discover: exit %d: %s", r.code, r.stderr)
	}
	testkit.JSONEqual(t, `{"name":"text.upper","summary":"Upper-cases text","paramStructure":"by-name",
		"params":[{"name":"text","schema":{"type":"string"},"required":true}],"result":{"name":"result","schema":{}}}`,
		discoveredMethod(t, []byte(r.stdout), "text.upper"))
}

// rpc serve -describe -params: its own rpc.discover carries them.
func TestServeDescribed(t *testing.T) {
	h := hubtest.Start(t, nil)
	_, _, lines := start(t, "serve", "-describe", "upper=Upper-cases text", "-params", "upper="+upperSchema, h.WS(), "upper=tr a-z A-Z")
	waitLine(t, lines, "serving upper")
	served := onlyPeer(t, h)
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	var doc json.RawMessage
	if err := served.Call(ctx, "rpc.discover", nil, &doc); err != nil {
		t.Fatal(err)
	}
	testkit.JSONEqual(t, `{"name":"upper","summary":"Upper-cases text","paramStructure":"by-name",
		"params":[{"name":"text","schema":{"type":"string"},"required":true}],"result":{"name":"result","schema":{}}}`,
		discoveredMethod(t, doc, "upper"))
}

func TestDescribeUsage(t *testing.T) {
	h := hubtest.Start(t, nil)
	for _, args := range [][]string{
		{"provide", "-describe", "other=x", h.WS(), "a=true"},
		{"provide", "-params", "a=[1]", h.WS(), "a=true"},
		{"provide", "-params", `a={"type":"array"}`, h.WS(), "a=true"},
		{"serve", "-describe", "a.*=x", h.WS(), "a.*=true"},
	} {
		if r := rpc(t, "", args...); r.code != exitUsage || !strings.Contains(r.stderr, "-") {
			t.Errorf("%q: exit %d, %q", args, r.code, r.stderr)
		}
	}
}
