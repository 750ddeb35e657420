package client

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/switchboard-rpc/switchboard/internal/hubtest"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
)

// discovered returns the method object of name in the hub's rpc.discover.
func discovered(t *testing.T, c *Client, name string) string {
	t.Helper()
	var doc struct{ Methods []json.RawMessage }
	if err := c.Call(ctx(t), "rpc.discover", nil, &doc); err != nil {
		t.Fatal(err)
	}
	for _, raw := range doc.Methods {
		var m struct{ Name string }
		if json.Unmarshal(raw, &m) == nil && m.Name == name {
			return string(raw)
		}
	}
	t.Fatalf("%s not in rpc.discover", name)
	return ""
}

// A described method reaches the hub's rpc.discover with its summary,
// description and params: given by a schema, or the handler's with their
// descriptions.
func TestProvideDescribed(t *testing.T) {
	h := hubtest.Start(t, nil)
	service := dial(t, h.WS(), nil)
	caller := dial(t, h.WS(), nil)

	raw := peer.HandlerFunc(func(_ context.Context, req *peer.Request) (any, error) { return "a page", nil })
	if _, err := service.ProvideDescribed(ctx(t), "page.summary", raw, Description{
		Summary:     "Summarizes the page",
		Description: "Reads the open page and says what it is about.",
		Params:      map[string]string{"words": "At most this many words"},
		Schema:      json.RawMessage(`{"type":"object","properties":{"words":{"type":"integer"},"lang":{"type":"string"}},"required":["words"]}`),
	}); err != nil {
		t.Fatal(err)
	}
	testkit.JSONEqual(t, `{"name":"page.summary","summary":"Summarizes the page",
		"description":"Reads the open page and says what it is about.","paramStructure":"by-name",
		"params":[{"name":"lang","schema":{"type":"string"}},
			{"name":"words","schema":{"type":"integer"},"required":true,"description":"At most this many words"}],
		"result":{"name":"result","schema":{}}}`, discovered(t, caller, "page.summary"))

	if _, err := service.ProvideDescribed(ctx(t), "billing.charge", peer.Func(charge), Description{
		Summary: "Charges an account",
		Params:  map[string]string{"amount": "In cents"},
	}); err != nil {
		t.Fatal(err)
	}
	var m struct {
		Summary string
		Params  []struct{ Name, Description string }
	}
	if err := json.Unmarshal([]byte(discovered(t, caller, "billing.charge")), &m); err != nil {
		t.Fatal(err)
	}
	if m.Summary != "Charges an account" || len(m.Params) != 1 || m.Params[0].Name != "amount" || m.Params[0].Description != "In cents" {
		t.Errorf("billing.charge described as %+v", m)
	}

	if _, err := service.ProvideDescribed(ctx(t), "bad.schema", raw, Description{Schema: json.RawMessage(`{"type":"array"}`)}); err == nil {
		t.Error("a params schema of type array was taken")
	}
}
