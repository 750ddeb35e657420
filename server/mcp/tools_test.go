package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-rpc/switchboard/client"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
	"github.com/switchboard-rpc/switchboard/server/mcp"
)

func TestInitialize(t *testing.T) {
	th := newTestHub(t, nil)
	cs := th.connect(t, "", nil)
	res := cs.InitializeResult()
	if res.ServerInfo == nil || res.ServerInfo.Name != "switchboard" || res.ServerInfo.Version == "" {
		t.Errorf("serverInfo = %+v, want switchboard and a version", res.ServerInfo)
	}
	if c := res.Capabilities; c.Tools == nil || !c.Tools.ListChanged || c.Resources == nil || !c.Resources.Subscribe {
		t.Errorf("capabilities = %+v, want tools.listChanged and resources.subscribe", c)
	}
	if v := res.ProtocolVersion; v != "2025-11-25" && v != "2025-06-18" {
		t.Errorf("protocol version %q, want a version with sessions", v)
	}
	if cs.ID() == "" {
		t.Error("no Mcp-Session-Id")
	}
}

// sumParams are the params of a provided method, described by its
// provider's rpc.discover.
type sumParams struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

func TestListTools(t *testing.T) {
	th := newTestHub(t, nil)
	th.provider(t, "", "calc.sum", peer.Func(func(_ context.Context, p sumParams) (float64, error) { return p.A + p.B, nil }))
	cs := th.connect(t, "", nil)
	tools := map[string]*sdk.Tool{}
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		tools[tool.Name] = tool
	}
	for _, name := range []string{"add", "subtract", "sleep", "calc.sum"} {
		if tools[name] == nil {
			t.Errorf("tool %s not listed; have %v", name, keys(tools))
		}
	}
	for name := range tools {
		if len(name) > 4 && name[:4] == "rpc." {
			t.Errorf("%s listed", name)
		}
	}
	if add := tools["add"]; add != nil {
		if add.Description == "" {
			t.Error("add has no description")
		}
		b, _ := json.Marshal(add.InputSchema)
		testkit.JSONEqual(t, `{"type":"object","properties":{"a":{"type":"number","description":"the first number"},"b":{"type":"number","description":"the second number"}},"required":["a","b"]}`, string(b))
	}
	if sum := tools["calc.sum"]; sum != nil {
		var s struct {
			Type       string         `json:"type"`
			Properties map[string]any `json:"properties"`
		}
		b, _ := json.Marshal(sum.InputSchema)
		if json.Unmarshal(b, &s); s.Type != "object" || s.Properties["a"] == nil || s.Properties["b"] == nil {
			t.Errorf("calc.sum inputSchema = %s, want a and b", b)
		}
	}
}

// bare serves one method and no rpc.discover: what it provides is
// described by nobody.
type bare struct{ h peer.Handler }

func (b bare) Lookup(method string) (peer.Handler, peer.Mode) {
	if method == "page.title" {
		return b.h, peer.Concurrent
	}
	return nil, peer.Concurrent
}

func TestListUndescribed(t *testing.T) {
	th := newTestHub(t, nil)
	ctx := t.Context()
	conn := dialPeer(t, th, bare{peer.Func(func(context.Context, struct{}) (string, error) { return "Home", nil })})
	if err := conn.Call(ctx, "rpc.provide", []string{"page.title"}, nil); err != nil {
		t.Fatal(err)
	}
	cs := th.connect(t, "", nil)
	var found *sdk.Tool
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if tool.Name == "page.title" {
			found = tool
		}
	}
	if found == nil {
		t.Fatal("page.title not listed")
	}
	b, _ := json.Marshal(found.InputSchema)
	testkit.JSONEqual(t, `{"type":"object"}`, string(b))
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "page.title"})
	if err != nil || res.IsError || text(res) != `"Home"` {
		t.Fatalf("call page.title = %+v, %v", res, err)
	}
}

func TestCallTool(t *testing.T) {
	th := newTestHub(t, nil)
	th.provider(t, "", "calc.sum", peer.Func(func(_ context.Context, p sumParams) (float64, error) { return p.A + p.B, nil }))
	cs := th.connect(t, "", nil)
	ctx := t.Context()
	for _, tc := range []struct {
		name       string
		args       any
		text       string
		structured string // "" for none
	}{
		{"add", map[string]any{"a": 1, "b": 2}, "3", ""},
		{"calc.sum", map[string]any{"a": 40, "b": 2}, "42", ""},
		{"echo", map[string]any{"x": []int{1, 2}}, `{"x":[1,2]}`, `{"x":[1,2]}`},
		{"sleep", map[string]any{"ms": 1}, `{"slept":1}`, `{"slept":1}`},
	} {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tc.name, Arguments: tc.args})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if res.IsError || text(res) != tc.text {
			t.Errorf("%s: isError %v, text %q; want %q", tc.name, res.IsError, text(res), tc.text)
		}
		if tc.structured == "" {
			if res.StructuredContent != nil {
				t.Errorf("%s: structuredContent %v, want none", tc.name, res.StructuredContent)
			}
		} else {
			b, _ := json.Marshal(res.StructuredContent)
			testkit.JSONEqual(t, tc.structured, string(b))
		}
	}
}

func TestCallToolErrors(t *testing.T) {
	th := newTestHub(t, nil)
	th.provider(t, "", "pay.charge", peer.Func(func(context.Context, struct{}) (any, error) {
		return nil, &peer.Error{Code: 4002, Message: "card declined", Data: json.RawMessage(`{"retry":false}`)}
	}))
	cs := th.connect(t, "", nil)
	ctx := t.Context()

	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "pay.charge"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	if !res.IsError || text(res) != "card declined" {
		t.Errorf("isError %v, text %q; want true, the error's message", res.IsError, text(res))
	}
	testkit.JSONEqual(t, `{"error":{"code":4002,"message":"card declined","data":{"retry":false}}}`, string(b))

	// The hub's own method's error, params refused.
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": -1}})
	if err != nil || !res.IsError {
		t.Fatalf("sleep -1 = %+v, %v; want isError", res, err)
	}
	b, _ = json.Marshal(res.StructuredContent)
	var se struct{ Error peer.Error }
	if json.Unmarshal(b, &se); se.Error.Code != peer.CodeInvalidParams {
		t.Errorf("structuredContent %s, want -32602", b)
	}

	for _, name := range []string{"no.such", "rpc.subscribe", "rpc.discover"} {
		_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name})
		var we *jsonrpc.Error
		if !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("call %s: %v, want JSON-RPC error -32602", name, err)
		}
	}
}

func TestProviderLost(t *testing.T) {
	th := newTestHub(t, nil)
	started := make(chan struct{})
	c, _ := th.provider(t, "", "slow.op", peer.Func(func(ctx context.Context, _ struct{}) (any, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	}))
	cs := th.connect(t, "", nil)
	go func() {
		<-started
		_ = c.Close()
	}()
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "slow.op"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var se struct{ Error peer.Error }
	if json.Unmarshal(b, &se); !res.IsError || se.Error.Code != peer.CodeProviderLost {
		t.Errorf("result %s (isError %v), want -32006", b, res.IsError)
	}
}

func text(res *sdk.CallToolResult) string {
	if len(res.Content) != 1 {
		return ""
	}
	tc, _ := res.Content[0].(*sdk.TextContent)
	if tc == nil {
		return ""
	}
	return tc.Text
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// More than a page of tools: tools/list gives them a page at a time.
func TestListPages(t *testing.T) {
	th := newTestHub(t, nil)
	ctx := t.Context()
	handler := bare{peer.Func(func(context.Context, struct{}) (string, error) { return "", nil })}
	for p := range 2 {
		names := make([]string, 600)
		for i := range names {
			names[i] = fmt.Sprintf("many.p%d.m%03d", p, i)
		}
		if err := dialPeer(t, th, handler).Call(ctx, "rpc.provide", names, nil); err != nil {
			t.Fatal(err)
		}
	}
	cs := th.connect(t, "", nil)
	first, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Tools) != 1000 || first.NextCursor == "" {
		t.Fatalf("first page: %d tools, cursor %q; want 1000 and a cursor", len(first.Tools), first.NextCursor)
	}
	seen := map[string]bool{}
	for tool, err := range cs.Tools(ctx, nil) { // every page
		if err != nil {
			t.Fatal(err)
		}
		if seen[tool.Name] {
			t.Fatalf("%s listed twice", tool.Name)
		}
		seen[tool.Name] = true
	}
	if !seen["many.p0.m000"] || !seen["many.p1.m599"] || !seen["add"] || len(seen) < 1200 {
		t.Errorf("%d tools over all pages", len(seen))
	}
}

func TestMaxSessions(t *testing.T) {
	th := newTestHubWith(t, nil, &mcp.Options{MaxSessions: 1})
	initialize := func() *http.Response {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, th.URL+"/mcp",
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	first := initialize()
	if first.StatusCode != http.StatusOK {
		t.Fatalf("first session: %s", first.Status)
	}
	if second := initialize(); second.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("second session: %s, want 503", second.Status)
	}
	// Its end makes room.
	del, _ := http.NewRequestWithContext(t.Context(), http.MethodDelete, th.URL+"/mcp", nil)
	del.Header.Set("Mcp-Session-Id", first.Header.Get("Mcp-Session-Id"))
	resp, err := http.DefaultClient.Do(del)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	testkit.WaitFor(t, "room for a session once the first ended", func() bool {
		return initialize().StatusCode == http.StatusOK
	})
}

// The tools of the last rpc.discover document are kept: a method provided
// again with another description is listed with the new one.
// (TestGrantsFilterTools lists the kept tools to users who may call
// different ones.)
func TestListFollowsDescriptions(t *testing.T) {
	th := newTestHub(t, nil)
	cs := th.connect(t, "", nil)
	c, err := client.Dial(t.Context(), th.wsURL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sum := peer.Func(func(_ context.Context, p sumParams) (float64, error) { return p.A + p.B, nil })
	description := func() string {
		t.Helper()
		for tool, err := range cs.Tools(t.Context(), nil) {
			if err != nil {
				t.Fatal(err)
			}
			if tool.Name == "calc.sum" {
				return tool.Description
			}
		}
		return "(not listed)"
	}
	for _, summary := range []string{"Adds two numbers", "Sums a and b"} {
		p, err := c.ProvideDescribed(t.Context(), "calc.sum", sum, client.Description{Summary: summary})
		if err != nil {
			t.Fatal(err)
		}
		for range 2 { // the second list is the kept document's
			if got := description(); got != summary {
				t.Errorf("calc.sum described %q, want %q", got, summary)
			}
		}
		if err := p.Withdraw(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if got := description(); got != "(not listed)" {
		t.Errorf("calc.sum withdrawn, described %q", got)
	}
}
