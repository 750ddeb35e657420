package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
	"github.com/switchboard-rpc/switchboard/server/mcp"
)

func TestProgress(t *testing.T) {
	th := newTestHub(t, nil)
	th.provider(t, "", "job.run", peer.Func(func(ctx context.Context, _ struct{}) (string, error) {
		_ = peer.Progress(ctx, map[string]any{"progress": 1, "total": 4, "message": "a quarter"})
		_ = peer.Progress(ctx, "warming up")
		_ = peer.Progress(ctx, map[string]any{"stage": 3})
		return "done", nil
	}))
	var mu sync.Mutex
	var got []*sdk.ProgressNotificationParams
	cs := th.connect(t, "", &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
			mu.Lock()
			got = append(got, r.Params)
			mu.Unlock()
		},
	})
	params := &sdk.CallToolParams{Name: "job.run"}
	params.SetProgressToken("tok-1")
	res, err := cs.CallTool(t.Context(), params)
	if err != nil || text(res) != `"done"` {
		t.Fatalf("call = %+v, %v", res, err)
	}
	// Sent before the answer, on the same stream; the client's handler
	// may run after CallTool returns.
	testkit.WaitFor(t, "3 progress notifications", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= 3
	})
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 3 {
		t.Fatalf("%d progress notifications, want 3", len(got))
	}
	want := []sdk.ProgressNotificationParams{
		{ProgressToken: "tok-1", Progress: 1, Total: 4, Message: "a quarter"},
		{ProgressToken: "tok-1", Progress: 2, Message: `"warming up"`},
		{ProgressToken: "tok-1", Progress: 3, Message: `{"stage":3}`},
	}
	for i, w := range want {
		g := got[i]
		if g.ProgressToken != w.ProgressToken || g.Progress != w.Progress || g.Total != w.Total || g.Message != w.Message {
			t.Errorf("progress %d = %+v, want %+v", i, *g, w)
		}
	}
}

// blocker is a provided method that runs until cancelled, and reports
// the cancellation.
func blocker(started, cancelled chan<- struct{}) peer.Handler {
	return peer.Func(func(ctx context.Context, _ struct{}) (any, error) {
		close(started)
		<-ctx.Done()
		close(cancelled)
		return nil, ctx.Err()
	})
}

func TestCancelReachesProvider(t *testing.T) {
	th := newTestHub(t, nil)
	started, cancelled := make(chan struct{}), make(chan struct{})
	th.provider(t, "", "job.wait", blocker(started, cancelled))
	cs := th.connect(t, "", nil)

	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "job.wait"})
		errc <- err
	}()
	testkit.Recv(t, started, "the call at the provider")
	cancel() // the SDK's client sends notifications/cancelled
	testkit.Recv(t, cancelled, "rpc.cancel at the provider")
	if err := testkit.Recv(t, errc, "the call's end"); !errors.Is(err, context.Canceled) {
		t.Errorf("call: %v, want context.Canceled", err)
	}
}

func TestSessionEndCancelsCalls(t *testing.T) {
	th := newTestHub(t, nil)
	started, cancelled := make(chan struct{}), make(chan struct{})
	th.provider(t, "", "job.wait", blocker(started, cancelled))
	cs := th.connect(t, "", nil)

	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "job.wait"})
		errc <- err
	}()
	testkit.Recv(t, started, "the call at the provider")
	// The SDK's ClientSession.Close waits for the calls in flight: DELETE
	// as a client that gives up on them would.
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodDelete, th.URL+"/mcp", nil)
	req.Header.Set("Mcp-Session-Id", cs.ID())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("DELETE: %s", resp.Status)
	}
	testkit.Recv(t, cancelled, "rpc.cancel at the provider")
	if err := testkit.Recv(t, errc, "the call's end"); err == nil {
		t.Error("the call of a closed session succeeded")
	}
}

func TestClientGoneCancelsCalls(t *testing.T) {
	th := newTestHub(t, nil)
	started, cancelled := make(chan struct{}), make(chan struct{})
	th.provider(t, "", "job.wait", blocker(started, cancelled))

	// A raw client: initialize, then a call whose POST it drops.
	post := func(ctx context.Context, session, body string) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, th.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		return http.DefaultClient.Do(req)
	}
	ctx := t.Context()
	resp, err := post(ctx, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	session := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || session == "" {
		t.Fatalf("initialize: %s, session %q", resp.Status, session)
	}
	resp, err = post(ctx, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	callCtx, drop := context.WithCancel(ctx)
	go func() {
		resp, err := post(callCtx, session, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"job.wait","arguments":{}}}`)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	testkit.Recv(t, started, "the call at the provider")
	drop()
	testkit.Recv(t, cancelled, "rpc.cancel at the provider")
}

// The hub's own methods report progress too: the demo's sleep sends
// rpc.progress about every 100 ms.
func TestProgressOwnMethod(t *testing.T) {
	th := newTestHub(t, nil)
	notes := make(chan *sdk.ProgressNotificationParams, 64)
	cs := th.connect(t, "", &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) { notes <- r.Params },
	})
	params := &sdk.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 350}}
	params.SetProgressToken(7)
	if _, err := cs.CallTool(t.Context(), params); err != nil {
		t.Fatal(err)
	}
	n := testkit.Recv(t, notes, "progress of sleep")
	if tok, ok := n.ProgressToken.(float64); !ok || tok != 7 || n.Progress <= 0 {
		t.Errorf("progress %+v", n)
	}
}

func TestInFlightLimit(t *testing.T) {
	th := newTestHubWith(t, nil, &mcp.Options{MaxInFlight: 1})
	started, cancelled := make(chan struct{}), make(chan struct{})
	th.provider(t, "", "job.wait", blocker(started, cancelled))
	cs := th.connect(t, "", nil)
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "job.wait"})
		errc <- err
	}()
	testkit.Recv(t, started, "the first call at the provider")
	// A tool error: the SDK's client takes a JSON-RPC -32004 for "server
	// is closing".
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "add", Arguments: map[string]any{"a": 1, "b": 2}})
	if err != nil {
		t.Fatalf("second call: %v", err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var se struct{ Error peer.Error }
	if json.Unmarshal(b, &se); !res.IsError || se.Error.Code != peer.CodeOverloaded {
		t.Errorf("second call: %s, want isError with -32004", b)
	}
	cancel()
	testkit.Recv(t, cancelled, "the first call's cancellation")
	testkit.Recv(t, errc, "the first call's end")
	// The client stops waiting at once; the hub ends the call when the
	// provider's answer comes: the slot is free from then on.
	testkit.WaitFor(t, "a call once the first has ended", func() bool {
		res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "add", Arguments: map[string]any{"a": 1, "b": 2}})
		if err != nil {
			t.Fatal(err)
		}
		return text(res) == "3"
	})
}
