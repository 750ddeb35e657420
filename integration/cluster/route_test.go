package cluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/client"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
)

// callWhenProvided calls method through c until the hub stops answering
// -32601: the nodes learn of each other's providers from their
// announcements, which take a moment to go round.
func callWhenProvided(t *testing.T, c *client.Client, method string, params, result any) error {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		err := c.Call(ctx, method, params, result)
		cancel()
		if e, ok := errors.AsType[*peer.Error](err); !ok || e.Code != peer.CodeMethodNotFound || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond) // polls the other nodes' announcements
	}
}

// muxHandler serves each call with mux's handler of its method.
func muxHandler(mux *peer.Mux) peer.Handler {
	return peer.HandlerFunc(func(ctx context.Context, req *peer.Request) (any, error) {
		h, _ := mux.Lookup(req.Method)
		if h == nil {
			return nil, &peer.Error{Code: peer.CodeMethodNotFound, Message: "Method not found"}
		}
		return h.ServeRPC(ctx, req)
	})
}

func wantCode(t *testing.T, what string, err error, code peer.Code) {
	t.Helper()
	if e, ok := errors.AsType[*peer.Error](err); !ok || e.Code != code {
		t.Fatalf("%s: %v, want code %d", what, err, code)
	}
}

type chargeParams struct {
	Amount int `json:"amount"`
}

// TestRouteAcrossNodes: a service on n2 provides billing.*; a client on
// n1 calls it through its own node. The answers, errors, progress and
// cancellation pass between them as on one hub, and when n2 is killed
// with a call in flight, the caller gets -32006.
func TestRouteAcrossNodes(t *testing.T) {
	ns := startNATS(t)
	hubs := startNodes(t, ns, 3)
	service := dial(t, hubs[1])
	started := make(chan struct{}, 1)
	ended := make(chan error, 1)
	mux := peer.NewMux()
	mux.Handle("billing.charge", peer.Func(func(_ context.Context, p chargeParams) (string, error) {
		if p.Amount > 100 {
			return "", &peer.Error{Code: 4002, Message: "over the limit", Data: json.RawMessage(`{"limit":100}`)}
		}
		return "charged", nil
	}))
	mux.Handle("billing.report", peer.HandlerFunc(func(ctx context.Context, _ *peer.Request) (any, error) {
		if err := peer.Progress(ctx, map[string]int{"percent": 10}); err != nil {
			return nil, err
		}
		started <- struct{}{}
		<-ctx.Done()
		ended <- ctx.Err()
		return nil, ctx.Err()
	}))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := service.Provide(ctx, "billing.*", muxHandler(mux)); err != nil {
		t.Fatal(err)
	}
	caller := dial(t, hubs[0])

	var got string
	if err := callWhenProvided(t, caller, "billing.charge", chargeParams{Amount: 5}, &got); err != nil || got != "charged" {
		t.Fatalf("billing.charge on n2 from n1: %q, %v", got, err)
	}
	err := caller.Call(ctx, "billing.charge", chargeParams{Amount: 500}, nil)
	if e, ok := errors.AsType[*peer.Error](err); !ok || e.Code != 4002 || e.Message != "over the limit" || string(e.Data) != `{"limit":100}` {
		t.Fatalf("the provider's error: %v", err)
	}
	wantCode(t, "a method no node provides", caller.Call(ctx, "billing.none.such", nil, nil), peer.CodeMethodNotFound)

	// Progress reaches the caller on n1; its cancel reaches the provider.
	progress := make(chan string, 1)
	cctx, ccancel := context.WithCancel(ctx)
	defer ccancel()
	cctx = peer.WithProgress(cctx, func(data json.RawMessage) { progress <- string(data) })
	errc := make(chan error, 1)
	go func() { errc <- caller.Call(cctx, "billing.report", nil, nil) }()
	<-started
	if p := <-progress; p != `{"percent":10}` {
		t.Fatalf("progress %s", p)
	}
	ccancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
	if err := testkit.RecvSlow(t, ended, "ended"); !errors.Is(err, context.Canceled) {
		t.Fatalf("the provider's handler ended with %v, want its context cancelled", err)
	}

	// n2 is killed while a call waits for its provider.
	go func() { errc <- caller.Call(ctx, "billing.report", nil, nil) }()
	<-started
	hubs[1].Kill()
	start := time.Now()
	wantCode(t, "the call in flight when n2 was killed", testkit.RecvSlow(t, errc, "errc"), peer.CodeProviderLost)
	t.Logf("-32006 %v after n2 was killed", time.Since(start).Round(time.Millisecond))
}

// TestRouteFewestInFlight: with providers on two other nodes, a call goes
// to the one with fewer calls in flight; a provider on the caller's own
// node comes first.
func TestRouteFewestInFlight(t *testing.T) {
	ns := startNATS(t)
	hubs := startNodes(t, ns, 3)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	release := make(chan struct{})
	defer close(release)
	busy := make(chan string, 1)
	provider := func(i int) {
		name := nodeName(i)
		mux := peer.NewMux()
		mux.Handle("work.who", peer.Func(func(context.Context, struct{}) (string, error) { return name, nil }))
		mux.Handle("work.hold", peer.Func(func(ctx context.Context, _ struct{}) (string, error) {
			busy <- name
			select {
			case <-release:
			case <-ctx.Done():
			}
			return name, nil
		}))
		if _, err := dial(t, hubs[i]).Provide(ctx, "work.*", muxHandler(mux)); err != nil {
			t.Fatal(err)
		}
	}
	provider(1)
	provider(2)
	caller := dial(t, hubs[0])
	var first string
	if err := callWhenProvided(t, caller, "work.who", nil, &first); err != nil {
		t.Fatal(err)
	}
	// Wait until n1 knows both providers: each answers in turn.
	seen := map[string]bool{first: true}
	for len(seen) < 2 {
		if ctx.Err() != nil {
			t.Fatalf("n1 knows only the provider of %v", seen)
		}
		var who string
		if err := callWhenProvided(t, caller, "work.who", nil, &who); err != nil {
			t.Fatal(err)
		}
		seen[who] = true
	}
	// One call holds one provider; the next calls all go to the other.
	go func() { _ = caller.Call(ctx, "work.hold", nil, nil) }()
	held := <-busy
	for i := range 5 {
		var who string
		if err := caller.Call(ctx, "work.who", nil, &who); err != nil {
			t.Fatal(err)
		}
		if who == held {
			t.Fatalf("call %d went to %s, which has one in flight; the other has none", i, who)
		}
	}

	provider(0)
	for range 5 {
		var who string
		if err := caller.Call(ctx, "work.who", nil, &who); err != nil || who != nodeName(0) {
			t.Fatalf("got %q, %v; want the provider of the caller's node", who, err)
		}
	}
}
