package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/hub/rules"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
	"github.com/switchboard-rpc/switchboard/server"
)

func TestToolsListChanged(t *testing.T) {
	th := newTestHub(t, nil)
	changed := make(chan struct{}, 16)
	cs := th.connect(t, "", &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
	})
	if names := toolNames(t, cs); has(names, "page.summary") {
		t.Fatalf("page.summary listed before it is provided: %v", names)
	}
	c, p := th.provider(t, "", "page.summary", peer.Func(func(context.Context, struct{}) (string, error) { return "hello", nil }))
	testkit.Recv(t, changed, "list_changed after rpc.provide")
	if names := toolNames(t, cs); !has(names, "page.summary") {
		t.Fatalf("page.summary not listed once provided: %v", names)
	}
	if err := p.Withdraw(t.Context()); err != nil {
		t.Fatal(err)
	}
	testkit.Recv(t, changed, "list_changed after rpc.unprovide")
	if names := toolNames(t, cs); has(names, "page.summary") {
		t.Fatalf("page.summary listed once withdrawn: %v", names)
	}
	if _, err := c.Provide(t.Context(), "page.summary", peer.Func(func(context.Context, struct{}) (string, error) { return "again", nil })); err != nil {
		t.Fatal(err)
	}
	testkit.Recv(t, changed, "list_changed after rpc.provide again")
	if names := toolNames(t, cs); !has(names, "page.summary") {
		t.Fatalf("page.summary not listed once provided again: %v", names)
	}
	_ = c.Close() // the provider leaves
	testkit.Recv(t, changed, "list_changed after the provider left")
	if names := toolNames(t, cs); has(names, "page.summary") {
		t.Fatalf("page.summary listed once its provider left: %v", names)
	}
}

func TestResources(t *testing.T) {
	th := newTestHub(t, nil)
	h := th.srv.Hub()
	ctx := t.Context()
	for _, d := range []any{map[string]any{"score": "1-0"}, "half time"} {
		if _, err := h.Publish(ctx, "news.sport", d); err != nil {
			t.Fatal(err)
		}
	}
	updated := make(chan string, 16)
	cs := th.connect(t, "", &sdk.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *sdk.ResourceUpdatedNotificationRequest) { updated <- r.Params.URI },
	})

	tpls, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(tpls.ResourceTemplates) != 1 || tpls.ResourceTemplates[0].URITemplate != "switchboard://topic/{topic}" {
		t.Fatalf("templates = %+v, %v", tpls, err)
	}

	const uri = "switchboard://topic/news.sport"
	res, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Contents) != 1 || res.Contents[0].URI != uri {
		t.Fatalf("contents = %+v", res.Contents)
	}
	var events []struct {
		Seq   uint64          `json:"seq"`
		Epoch string          `json:"epoch"`
		Data  json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal([]byte(res.Contents[0].Text), &events); err != nil {
		t.Fatalf("text %q: %v", res.Contents[0].Text, err)
	}
	if len(events) != 2 || events[0].Seq >= events[1].Seq || events[0].Epoch == "" ||
		string(events[0].Data) != `{"score":"1-0"}` || string(events[1].Data) != `"half time"` {
		t.Errorf("history = %s", res.Contents[0].Text)
	}

	if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Publish(ctx, "news.sport", "full time"); err != nil {
		t.Fatal(err)
	}
	if got := testkit.Recv(t, updated, "resources/updated"); got != uri {
		t.Errorf("updated %q, want %q", got, uri)
	}
	if err := cs.Unsubscribe(ctx, &sdk.UnsubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	// Unsubscribed: a later event on another, subscribed topic is the
	// next notification.
	const other = "switchboard://topic/news.weather"
	if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: other}); err != nil {
		t.Fatal(err)
	}
	_, _ = h.Publish(ctx, "news.sport", "extra time")
	_, _ = h.Publish(ctx, "news.weather", "sunny")
	if got := testkit.Recv(t, updated, "resources/updated"); got != other {
		t.Errorf("updated %q after unsubscribing, want %q", got, other)
	}
}

// grantsAuth authenticates alice, who may call add and subscribe to
// news.*, and bob, who may call page.* and nothing else: JWT-like
// identities with grants.
func grantsAuth(r *http.Request) (any, error) {
	switch server.BearerToken(r) {
	case "alice-token":
		return rules.NewIdentity(&rules.Token{Subject: "alice", Grants: &rules.Grants{
			Call: &[]string{"add"}, Subscribe: []string{"news.>"}}}), nil
	case "bob-token":
		return rules.NewIdentity(&rules.Token{Subject: "bob", Grants: &rules.Grants{
			Call: &[]string{"page.*"}, Provide: []string{"page.*"}}}), nil
	}
	return nil, server.ErrUnauthorized
}

func grantsHub(t *testing.T) *testHub {
	set := rules.Demo()
	return newTestHub(t, &server.Options{
		Hub:          hub.New(&hub.Options{Policy: set.Policy}),
		Authorize:    set.Authorize,
		Authenticate: grantsAuth,
	})
}

func TestGrantsFilterTools(t *testing.T) {
	th := grantsHub(t)
	th.provider(t, "bob-token", "page.summary", peer.Func(func(context.Context, struct{}) (string, error) { return "hi", nil }))
	ctx := t.Context()

	alice := th.connect(t, "alice-token", nil)
	if names := toolNames(t, alice); len(names) != 1 || names[0] != "add" {
		t.Errorf("alice lists %v, want [add]", names)
	}
	bob := th.connect(t, "bob-token", nil)
	if names := toolNames(t, bob); len(names) != 1 || names[0] != "page.summary" {
		t.Errorf("bob lists %v, want [page.summary]", names)
	}
	// What one may not call is not there for them.
	for _, tc := range []struct {
		cs   *sdk.ClientSession
		tool string
	}{{alice, "page.summary"}, {bob, "add"}} {
		_, err := tc.cs.CallTool(ctx, &sdk.CallToolParams{Name: tc.tool, Arguments: map[string]any{"a": 1, "b": 2}})
		var we *jsonrpc.Error
		if !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("call %s: %v, want -32602", tc.tool, err)
		}
	}
	if res, err := bob.CallTool(ctx, &sdk.CallToolParams{Name: "page.summary"}); err != nil || text(res) != `"hi"` {
		t.Errorf("bob's page.summary = %+v, %v", res, err)
	}
	// Topics: alice may read news.*, bob nothing.
	if _, err := alice.ReadResource(ctx, &sdk.ReadResourceParams{URI: "switchboard://topic/news.sport"}); err != nil {
		t.Errorf("alice reads news.sport: %v", err)
	}
	for _, uri := range []string{"switchboard://topic/news.sport", "switchboard://topic/secret"} {
		_, rerr := bob.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
		serr := bob.Subscribe(ctx, &sdk.SubscribeParams{URI: uri})
		for _, err := range []error{rerr, serr} {
			var we *jsonrpc.Error
			if !errors.As(err, &we) || we.Code != int64(peer.CodeUnauthorized) {
				t.Errorf("bob on %s: %v, want -32001", uri, err)
			}
		}
	}
}

func TestAuth(t *testing.T) {
	th := grantsHub(t)
	if _, err := th.tryConnect(t.Context(), "", nil); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
		t.Errorf("without a token: %v, want 401", err)
	}
	if _, err := th.tryConnect(t.Context(), "mallory", nil); err == nil {
		t.Error("a wrong token connected")
	}
	for _, tc := range []struct {
		token, origin string
		want          int
	}{
		{"", "", http.StatusUnauthorized},
		{"alice-token", "https://evil.example", http.StatusForbidden},
		{"alice-token", "", http.StatusOK},
	} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, th.URL+"/mcp",
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("token %q origin %q: %s, want %d", tc.token, tc.origin, resp.Status, tc.want)
		}
		if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
			del, _ := http.NewRequestWithContext(t.Context(), http.MethodDelete, th.URL+"/mcp", nil)
			del.Header.Set("Mcp-Session-Id", id)
			del.Header.Set("Authorization", "Bearer "+tc.token)
			if resp, err := http.DefaultClient.Do(del); err == nil {
				resp.Body.Close()
			}
		}
	}
}

func TestSessionBoundToUser(t *testing.T) {
	th := grantsHub(t)
	alice := th.connect(t, "alice-token", nil)
	// bob with alice's session id: refused.
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, th.URL+"/mcp",
		strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer bob-token")
	req.Header.Set("Mcp-Session-Id", alice.ID())
	req.Header.Set("Mcp-Protocol-Version", alice.InitializeResult().ProtocolVersion)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("bob in alice's session: %s, want 403", resp.Status)
	}
}

func TestNotAPeer(t *testing.T) {
	th := newTestHub(t, nil)
	th.provider(t, "", "page.summary", peer.Func(func(context.Context, struct{}) (string, error) { return "hi", nil }))
	cs := th.connect(t, "", nil)
	ctx := t.Context()
	if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: "switchboard://topic/chat"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "page.summary"}); err != nil {
		t.Fatal(err)
	}
	h := th.srv.Hub()
	if peers := h.Peers(); len(peers) != 1 {
		t.Errorf("%d peers, want the provider alone", len(peers))
	}
	if present, err := h.Presence("chat"); err != nil || len(present) != 0 {
		t.Errorf("presence on chat = %v, %v; want nobody", present, err)
	}
}

// A page of an allowed origin may use /mcp: its preflight passes without
// a token, and the answers carry the CORS headers.
func TestCORS(t *testing.T) {
	set := rules.Demo()
	th := newTestHub(t, &server.Options{
		Hub:            hub.New(&hub.Options{Policy: set.Policy}),
		Authenticate:   grantsAuth,
		AllowedOrigins: []string{"https://app.example"},
	})
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodOptions, th.URL+"/mcp", nil)
	req.Header.Set("Origin", "https://app.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "authorization, content-type, mcp-session-id")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example" ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Mcp-Session-Id") {
		t.Errorf("preflight: %s %v", resp.Status, resp.Header)
	}
	req, _ = http.NewRequestWithContext(t.Context(), http.MethodPost, th.URL+"/mcp",
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"page","version":"1"}}}`))
	req.Header.Set("Origin", "https://app.example")
	req.Header.Set("Authorization", "Bearer alice-token")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example" ||
		!strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "Mcp-Session-Id") {
		t.Errorf("initialize from the page: %s %v", resp.Status, resp.Header)
	}
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		del, _ := http.NewRequestWithContext(t.Context(), http.MethodDelete, th.URL+"/mcp", nil)
		del.Header.Set("Mcp-Session-Id", id)
		del.Header.Set("Authorization", "Bearer alice-token")
		if resp, err := http.DefaultClient.Do(del); err == nil {
			resp.Body.Close()
		}
	}
}

// Subscribing and unsubscribing while events come on the topic: the
// hub's publish lock and the handler's own are taken in one order.
func TestSubscribeWhilePublishing(t *testing.T) {
	th := newTestHub(t, nil)
	h := th.srv.Hub()
	cs := th.connect(t, "", &sdk.ClientOptions{
		ResourceUpdatedHandler: func(context.Context, *sdk.ResourceUpdatedNotificationRequest) {},
	})
	stop := make(chan struct{})
	published := make(chan struct{})
	go func() {
		defer close(published)
		for {
			select {
			case <-stop:
				return
			default:
				_, _ = h.Publish(context.Background(), "busy", 1)
			}
		}
	}()
	done := make(chan error, 1)
	go func() {
		const uri = "switchboard://topic/busy"
		for range 100 {
			if err := cs.Subscribe(t.Context(), &sdk.SubscribeParams{URI: uri}); err != nil {
				done <- err
				return
			}
			if err := cs.Unsubscribe(t.Context(), &sdk.UnsubscribeParams{URI: uri}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	err := testkit.Recv(t, done, "100 subscriptions while publishing")
	close(stop)
	<-published
	if err != nil {
		t.Fatal(err)
	}
}
