package natsbroker_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/hub/natsbroker"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
)

// heartbeat is the nodes' heartbeat in these tests: a node that stops is
// taken for gone within 3 of them.
const heartbeat = 50 * time.Millisecond

func startRouteNode(t testing.TB, url, name string, o *hub.Options) *node {
	t.Helper()
	return startBeatingNode(t, url, name, o, heartbeat)
}

// startBeatingNode is startRouteNode with a heartbeat of beat.
func startBeatingNode(t testing.TB, url, name string, o *hub.Options, beat time.Duration) *node {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	b, err := natsbroker.Connect(ctx, &natsbroker.Options{URLs: url, Node: name, Heartbeat: beat})
	if err != nil {
		t.Fatal(err)
	}
	opts := hub.Options{Policy: hub.AllowAll}
	if o != nil {
		opts = *o
	}
	opts.Broker = b.HubBroker()
	h := hub.New(&opts)
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return &node{h, b}
}

// join connects a peer serving mux (nil: nothing) to n, and returns its
// end and its hub id.
func join(t testing.TB, n *node, mux peer.Router, watch chan<- string) (*peer.Conn, string) {
	t.Helper()
	c, p := attach(t, n, &peer.Options{}, "user-"+n.b.Node(), routerFunc(func(method string) (peer.Handler, peer.Mode) {
		if (method == "rpc.join" || method == "rpc.leave") && watch != nil {
			return peer.HandlerFunc(func(_ context.Context, req *peer.Request) (any, error) {
				watch <- method + " " + string(req.Params)
				return nil, nil
			}), peer.Inline
		}
		if mux == nil {
			return nil, peer.Concurrent
		}
		return mux.Lookup(method)
	}))
	return c, p.ID()
}

// eventually waits until cond holds for n, checking it each time n hears
// from another node: the nodes learn about each other's peers from their
// announcements.
func eventually(t testing.TB, n *node, what string, cond func() bool) {
	t.Helper()
	testkit.WaitForEvent(t, what, func() <-chan struct{} { return natsbroker.Updated(n.b) }, cond)
}

func wantCode(t *testing.T, err error, code peer.Code) {
	t.Helper()
	var e *peer.Error
	if !errors.As(err, &e) || e.Code != code {
		t.Fatalf("got %v, want code %d", err, code)
	}
}

// provider returns a mux serving svc.* for the tests: echo, fail, wait
// (progress, then wait for cancellation).
func provider(name string, started chan<- struct{}, ended chan<- error) *peer.Mux {
	mux := peer.NewMux()
	mux.Handle("svc.echo", peer.HandlerFunc(func(_ context.Context, req *peer.Request) (any, error) {
		return map[string]any{"by": name, "params": req.Params}, nil
	}))
	mux.Handle("svc.fail", peer.HandlerFunc(func(context.Context, *peer.Request) (any, error) {
		return nil, &peer.Error{Code: 4001, Message: "card declined", Data: json.RawMessage(`{"retry":false}`)}
	}))
	mux.Handle("svc.wait", peer.HandlerFunc(func(ctx context.Context, _ *peer.Request) (any, error) {
		if err := peer.Progress(ctx, "started"); err != nil {
			return nil, err
		}
		if started != nil {
			started <- struct{}{}
		}
		<-ctx.Done()
		if ended != nil {
			ended <- ctx.Err()
		}
		return nil, ctx.Err()
	}))
	return mux
}

func provide(t *testing.T, c *peer.Conn, methods ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Wait)
	defer cancel()
	if err := c.Call(ctx, "rpc.provide", map[string]any{"methods": methods}, nil); err != nil {
		t.Fatal(err)
	}
}

func TestRouteToAnotherNode(t *testing.T) {
	url := startNATS(t)
	a := startRouteNode(t, url, "a", &hub.Options{Policy: hub.AllowAll, ForwardTimeout: time.Second})
	b := startRouteNode(t, url, "b", nil)
	started, ended := make(chan struct{}, 1), make(chan error, 1)
	prov, _ := join(t, b, provider("b", started, ended), nil)
	provide(t, prov, "svc.*")
	caller, _ := join(t, a, nil, nil)
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Wait)
	defer cancel()
	eventually(t, a, "a to know b's provider", func() bool { return a.b.Provides("svc.echo") })

	var res struct {
		By     string
		Params json.RawMessage
	}
	if err := caller.Call(ctx, "svc.echo", []int{1, 2}, &res); err != nil || res.By != "b" || string(res.Params) != "[1,2]" {
		t.Fatalf("svc.echo: %+v, %v", res, err)
	}
	err := caller.Call(ctx, "svc.fail", nil, nil)
	var e *peer.Error
	if !errors.As(err, &e) || e.Code != 4001 || e.Message != "card declined" || string(e.Data) != `{"retry":false}` {
		t.Fatalf("svc.fail: %v", err)
	}
	wantCode(t, caller.Call(ctx, "svc.none", nil, nil), peer.CodeMethodNotFound)

	// Progress reaches the caller; its cancel reaches the provider.
	progress := make(chan string, 1)
	cctx, ccancel := context.WithCancel(ctx)
	defer ccancel()
	cctx = peer.WithProgress(cctx, func(data json.RawMessage) {
		progress <- string(data)
		ccancel()
	})
	if err := caller.Call(cctx, "svc.wait", nil, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled svc.wait: %v", err)
	}
	if got := <-progress; got != `"started"` {
		t.Fatalf("progress %s", got)
	}
	if err := testkit.Recv(t, ended, "ended"); !errors.Is(err, context.Canceled) {
		t.Fatalf("the provider's context ended with %v", err)
	}
	<-started

	// The hub's forward timeout: -32003, and the provider is cancelled.
	wantCode(t, caller.Call(ctx, "svc.wait", nil, nil), peer.CodeTimeout)
	<-started
	if err := testkit.Recv(t, ended, "ended"); err == nil {
		t.Fatal("the provider's context did not end")
	}
	if st := a.h.Stats().Routes; st.Forwarded["svc.echo"] != 1 || st.InFlight != 0 {
		t.Fatalf("a's route stats %+v", st)
	}
}

// A provider of the caller's own node is preferred; the one of another
// node takes the calls when it is gone.
func TestRoutePrefersLocal(t *testing.T) {
	url := startNATS(t)
	a, b := startRouteNode(t, url, "a", nil), startRouteNode(t, url, "b", nil)
	pb, _ := join(t, b, provider("b", nil, nil), nil)
	provide(t, pb, "svc.echo")
	pa, _ := join(t, a, provider("a", nil, nil), nil)
	provide(t, pa, "svc.echo")
	caller, _ := join(t, a, nil, nil)
	eventually(t, a, "a to know b's provider", func() bool { return a.b.Provides("svc.echo") })
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Wait)
	defer cancel()
	for range 5 {
		var res struct{ By string }
		if err := caller.Call(ctx, "svc.echo", nil, &res); err != nil || res.By != "a" {
			t.Fatalf("got %q, %v; want a's provider", res.By, err)
		}
	}
	if err := pa.Call(ctx, "rpc.unprovide", []string{"svc.echo"}, nil); err != nil {
		t.Fatal(err)
	}
	var res struct{ By string }
	if err := caller.Call(ctx, "svc.echo", nil, &res); err != nil || res.By != "b" {
		t.Fatalf("got %q, %v; want b's provider", res.By, err)
	}
}

// A provider that disconnects, or whose node is lost, with a call in
// flight: the caller gets -32006.
func TestRouteProviderLost(t *testing.T) {
	url := startNATS(t)
	a, b := startRouteNode(t, url, "a", nil), startRouteNode(t, url, "b", nil)
	started := make(chan struct{}, 1)
	prov, _ := join(t, b, provider("b", started, nil), nil)
	provide(t, prov, "svc.wait")
	caller, _ := join(t, a, nil, nil)
	eventually(t, a, "a to know b's provider", func() bool { return a.b.Provides("svc.wait") })
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Wait)
	defer cancel()

	errc := make(chan error, 1)
	go func() { errc <- caller.Call(ctx, "svc.wait", nil, nil) }()
	<-started
	prov.Close()
	wantCode(t, testkit.Recv(t, errc, "errc"), peer.CodeProviderLost)

	// The node goes silent, as a killed process would: no goodbye.
	prov2, _ := join(t, b, provider("b", started, nil), nil)
	provide(t, prov2, "svc.wait")
	go func() { errc <- caller.Call(ctx, "svc.wait", nil, nil) }()
	<-started
	b.b.Conn().Close()
	start := time.Now()
	wantCode(t, testkit.Recv(t, errc, "errc"), peer.CodeProviderLost)
	if d := time.Since(start); d > 20*heartbeat {
		t.Errorf("the node's loss took %v to notice", d)
	}
	eventually(t, a, "a to forget b's provider", func() bool { return !a.b.Provides("svc.wait") })
	wantCode(t, caller.Call(ctx, "svc.wait", nil, nil), peer.CodeMethodNotFound)
}

// Presence spans the nodes, with each peer's node; a watcher on one node
// hears of peers joining and leaving on another.
func TestPresenceAcrossNodes(t *testing.T) {
	url := startNATS(t)
	a, b := startRouteNode(t, url, "a", nil), startRouteNode(t, url, "b", nil)
	changes := make(chan string, 10)
	watcher, watcherID := join(t, a, nil, changes)
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Wait)
	defer cancel()
	if err := watcher.Call(ctx, "rpc.subscribe", map[string]any{"topic": "room.1", "presence": true}, nil); err != nil {
		t.Fatal(err)
	}
	member, memberID := join(t, b, nil, nil)
	if err := member.Call(ctx, "rpc.subscribe", []string{"room.*"}, nil); err != nil {
		t.Fatal(err)
	}
	got := testkit.Recv(t, changes, "changes")
	want := `rpc.join {"topic":"room.1","peer":{"id":"` + memberID + `","user":"user-b","node":"b"}}`
	if got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}

	var res struct{ Peers []hub.PeerInfo }
	if err := watcher.Call(ctx, "rpc.presence", map[string]string{"topic": "room.1"}, &res); err != nil {
		t.Fatal(err)
	}
	wantPeers := []hub.PeerInfo{{ID: watcherID, User: "user-a", Node: "a"}, {ID: memberID, User: "user-b", Node: "b"}}
	if len(res.Peers) != 2 || res.Peers[0] != wantPeers[0] || res.Peers[1] != wantPeers[1] {
		t.Fatalf("presence %+v, want %+v", res.Peers, wantPeers)
	}

	if err := member.Call(ctx, "rpc.unsubscribe", []string{"room.*"}, nil); err != nil {
		t.Fatal(err)
	}
	if got := testkit.Recv(t, changes, "changes"); got != `rpc.leave {"topic":"room.1","peer":{"id":"`+memberID+`","user":"user-b","node":"b"}}` {
		t.Fatalf("got %s", got)
	}
}

// The Go API lists the peers of every node and calls one on another node.
func TestClusterPeersAndCallPeer(t *testing.T) {
	url := startNATS(t)
	a, b := startRouteNode(t, url, "a", nil), startRouteNode(t, url, "b", nil)
	_, onA := join(t, a, nil, nil)
	_, onB := join(t, b, provider("b", nil, nil), nil)
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Wait)
	defer cancel()
	var peers []hub.PeerInfo
	eventually(t, a, "a to know b", func() bool {
		var err error
		peers, err = a.h.ClusterPeers(ctx)
		return err == nil && len(peers) == 2
	})
	if peers[0].ID != onA || peers[0].Node != "a" || peers[1].ID != onB || peers[1].Node != "b" {
		t.Fatalf("ClusterPeers = %+v", peers)
	}
	var res struct{ By string }
	if err := a.h.CallPeer(ctx, onB, "svc.echo", []int{1}, &res); err != nil || res.By != "b" {
		t.Fatalf("CallPeer: %+v, %v", res, err)
	}
	err := a.h.CallPeer(ctx, onB, "svc.fail", nil, nil)
	if e, ok := errors.AsType[*peer.Error](err); !ok || e.Code != 4001 {
		t.Fatalf("CallPeer svc.fail: %v", err)
	}
	wantCode(t, a.h.CallPeer(ctx, "no-such-peer", "svc.echo", nil, nil), peer.CodeNoSuchPeer)
}

// A node whose NATS connection is gone has no subscriber for its calls:
// NATS says so at once, and the calls go to another node's provider
// without waiting for the node to miss its heartbeats. The heartbeats
// here are a minute apart, so that a call that waited for them would
// outlast the test's wait, whatever the machine's speed.
func TestRouteAroundAGoneNode(t *testing.T) {
	const beat = time.Minute
	url := startNATS(t)
	a := startBeatingNode(t, url, "a", nil, beat)
	b, c := startBeatingNode(t, url, "b", nil, beat), startBeatingNode(t, url, "c", nil, beat)
	pb, _ := join(t, b, provider("b", nil, nil), nil)
	provide(t, pb, "svc.echo")
	pc, _ := join(t, c, provider("c", nil, nil), nil)
	provide(t, pc, "svc.echo")
	caller, _ := join(t, a, nil, nil)
	eventually(t, a, "a to know both providers", func() bool {
		m := a.b.Members()
		return len(m) == 2 && len(m[0].Providers) == 1 && len(m[1].Providers) == 1
	})
	b.b.Conn().Close()
	// Once the NATS server has seen b's connection close, it answers a
	// request to b's subject with "no responders". Until then a call may
	// still reach the dying connection, and end in -32006.
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := a.b.Conn().Request(b.b.Subject("call", "b"), nil, 50*time.Millisecond)
		if errors.Is(err, nats.ErrNoResponders) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("NATS still delivers to b: %v", err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Wait)
	defer cancel()
	for range 10 {
		var res struct{ By string }
		if err := caller.Call(ctx, "svc.echo", nil, &res); err != nil || res.By != "c" {
			t.Fatalf("got %q, %v; want c's provider", res.By, err)
		}
	}
}
