// Package mcp_test runs MCP clients (the official Go SDK's) against a
// real hub process: /mcp as agents see it.
package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-rpc/switchboard/client"
	"github.com/switchboard-rpc/switchboard/integration/internal/hubproc"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
)

func TestMain(m *testing.M) { hubproc.Main(m) }

// bearer adds a token to each request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// connect opens an MCP session on h's /mcp with the SDK's client.
func connect(ctx context.Context, h *hubproc.Hub, token string, opts *sdk.ClientOptions) (*sdk.ClientSession, error) {
	hc := &http.Client{}
	if token != "" {
		hc.Transport = bearer{token}
	}
	ctx, cancel := context.WithTimeout(ctx, testkit.Wait)
	defer cancel()
	c := sdk.NewClient(&sdk.Implementation{Name: "integration", Version: "1.0.0"}, opts)
	return c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: h.URL() + "/mcp", HTTPClient: hc}, nil)
}

type jobParams struct {
	Steps int `json:"steps"`
}

// TestAgentCallsProvidedTool: a Go service provides a described method to
// a hub started with -demo; an MCP client lists it, calls it with
// progress, cancels a call (which reaches the service), sees the list
// change as the service comes and goes, and reads and follows a topic.
func TestAgentCallsProvidedTool(t *testing.T) {
	h := hubproc.Start(t, &hubproc.Options{Args: []string{"-demo", "-log-level", "warn"}})
	ctx := t.Context()

	changed := make(chan struct{}, 16)
	updated := make(chan string, 16)
	var mu sync.Mutex
	var notes []*sdk.ProgressNotificationParams
	cs, err := connect(ctx, h, "", &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
		ResourceUpdatedHandler: func(_ context.Context, r *sdk.ResourceUpdatedNotificationRequest) { updated <- r.Params.URI },
		ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
			mu.Lock()
			notes = append(notes, r.Params)
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if info := cs.InitializeResult().ServerInfo; info == nil || info.Name != "switchboard" {
		t.Errorf("serverInfo %+v", info)
	}

	// The service.
	svc, err := client.Dial(ctx, h.WebSocketURL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	started, cancelled := make(chan struct{}, 1), make(chan struct{}, 1)
	job := peer.Func(func(ctx context.Context, p jobParams) (string, error) {
		for i := 1; i <= p.Steps; i++ {
			_ = peer.Progress(ctx, map[string]any{"progress": i, "total": p.Steps})
		}
		if p.Steps > 0 {
			return "done", nil
		}
		started <- struct{}{}
		<-ctx.Done()
		cancelled <- struct{}{}
		return "", ctx.Err()
	})
	prov, err := svc.Provide(ctx, "svc.job", job)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Recv(t, changed, "list_changed once provided")

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var jobTool *sdk.Tool
	names := map[string]bool{}
	for _, tool := range tools.Tools {
		names[tool.Name] = true
		if tool.Name == "svc.job" {
			jobTool = tool
		}
	}
	if jobTool == nil || !names["add"] || names["rpc.discover"] {
		t.Fatalf("tools %v: want svc.job and add, no rpc.*", names)
	}
	schema, _ := json.Marshal(jobTool.InputSchema)
	if !strings.Contains(string(schema), `"steps"`) {
		t.Errorf("svc.job inputSchema %s, want its steps param", schema)
	}

	// The hub's own method, and the provided one with progress.
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "add", Arguments: map[string]any{"a": 40, "b": 2}})
	if err != nil || res.IsError || res.Content[0].(*sdk.TextContent).Text != "42" {
		t.Fatalf("add = %+v, %v", res, err)
	}
	params := &sdk.CallToolParams{Name: "svc.job", Arguments: map[string]any{"steps": 3}}
	params.SetProgressToken("p1")
	res, err = cs.CallTool(ctx, params)
	if err != nil || res.IsError || res.Content[0].(*sdk.TextContent).Text != `"done"` {
		t.Fatalf("svc.job = %+v, %v", res, err)
	}
	testkit.WaitFor(t, "3 progress notes", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(notes) >= 3
	})
	mu.Lock()
	if len(notes) != 3 || notes[2].Progress != 3 || notes[2].Total != 3 || notes[0].ProgressToken != "p1" {
		t.Errorf("progress notes %d, want 3 of 3", len(notes))
	}
	mu.Unlock()

	// Cancelling reaches the service.
	cctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(cctx, &sdk.CallToolParams{Name: "svc.job", Arguments: map[string]any{"steps": 0}})
		errc <- err
	}()
	testkit.Recv(t, started, "the call at the service")
	cancel()
	testkit.Recv(t, cancelled, "rpc.cancel at the service")
	if err := testkit.Recv(t, errc, "the cancelled call"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call: %v", err)
	}

	// Topics.
	if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: "switchboard://topic/news.sport"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Publish(ctx, "news.sport", map[string]any{"score": "2-1"}); err != nil {
		t.Fatal(err)
	}
	if uri := testkit.Recv(t, updated, "resources/updated"); uri != "switchboard://topic/news.sport" {
		t.Errorf("updated %q", uri)
	}
	rr, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "switchboard://topic/news.sport"})
	if err != nil || len(rr.Contents) != 1 || !strings.Contains(rr.Contents[0].Text, `"data":{"score":"2-1"}`) {
		t.Fatalf("read = %+v, %v", rr, err)
	}

	// The service withdraws its method.
	if err := prov.Withdraw(ctx); err != nil {
		t.Fatal(err)
	}
	testkit.Recv(t, changed, "list_changed once withdrawn")
	tools, err = cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if tool.Name == "svc.job" {
			t.Error("svc.job still listed once withdrawn")
		}
	}
}

// TestDoor: with -mcp (here as SWITCHBOARD_MCP, as every flag can be
// given) and -token-file, /mcp takes the tokens /rpc takes, refuses
// others with 401 and foreign browser origins with 403; without -mcp
// there is no /mcp.
func TestDoor(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := hubproc.Start(t, &hubproc.Options{Args: []string{"-token-file", tokens, "-log-level", "warn"},
		Env: []string{"SWITCHBOARD_MCP=true"}})
	ctx := t.Context()
	cs, err := connect(ctx, h, "s3cret", nil)
	if err != nil {
		t.Fatalf("with the token: %v", err)
	}
	defer cs.Close()
	if _, err := connect(ctx, h, "", nil); err == nil {
		t.Error("connected without a token")
	}
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	for _, tc := range []struct {
		token, origin string
		want          int
	}{
		{"", "", http.StatusUnauthorized},
		{"wrong", "", http.StatusUnauthorized},
		{"s3cret", "https://evil.example", http.StatusForbidden},
	} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.URL()+"/mcp", strings.NewReader(initialize))
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
	}

	off := hubproc.Start(t, &hubproc.Options{Args: []string{"-log-level", "warn"}})
	resp, err := http.Post(off.URL()+"/mcp", "application/json", strings.NewReader(initialize))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		t.Errorf("/mcp without -mcp: %s", resp.Status)
	}
}

// TestShutdownEndsSessions: SIGTERM with an MCP session open (its stream
// too) and a tool call running: the call is cancelled at the provider
// once the grace period ends, the session is closed, and the hub exits
// cleanly, without waiting on the session's stream.
func TestShutdownEndsSessions(t *testing.T) {
	h := hubproc.Start(t, &hubproc.Options{Args: []string{"-demo", "-shutdown-timeout", "1s"}})
	ctx := t.Context()
	cs, err := connect(ctx, h, "", &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {}, // keeps the stream in use
	})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	svc, err := client.Dial(ctx, h.WebSocketURL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	started, cancelled := make(chan struct{}, 1), make(chan struct{}, 1)
	if _, err := svc.Provide(ctx, "svc.wait", peer.Func(func(ctx context.Context, _ struct{}) (any, error) {
		started <- struct{}{}
		<-ctx.Done()
		cancelled <- struct{}{}
		return nil, ctx.Err()
	})); err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = cs.CallTool(ctx, &sdk.CallToolParams{Name: "svc.wait"}) }()
	testkit.Recv(t, started, "the call at the service")
	stopped := make(chan error, 1)
	go func() { stopped <- h.Stop() }()
	testkit.Recv(t, cancelled, "the call cancelled once the grace period ended")
	if err := testkit.Recv(t, stopped, "the hub's exit"); err != nil {
		t.Fatalf("stop: %v\n%s", err, h.Log())
	}
}
