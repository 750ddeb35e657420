package brokertest

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
)

// testPresence: a peer that subscribes on one node is in the presence of
// its topic on the other, and the other's watchers are told when it
// joins and leaves.
func testPresence(t *testing.T, start StartNode) {
	a, b := startNode(t, start, "a"), startNode(t, start, "b")
	watcher := a.join(t, "ann", nil)
	watcher.call(t, "rpc.subscribe", map[string]any{"topic": "room.1", "presence": true}, nil)
	member := b.join(t, "bob", nil)
	member.call(t, "rpc.subscribe", []string{"room.*"}, nil)
	wantPresence := func(method string) {
		t.Helper()
		n := watcher.next(t)
		var p struct {
			Topic string
			Peer  hub.PeerInfo
		}
		_ = json.Unmarshal(n.Params, &p)
		want := hub.PeerInfo{ID: member.id, User: "bob", Node: "b"}
		if n.Method != method || p.Topic != "room.1" || p.Peer != want {
			t.Fatalf("got %s %s, want %s of %+v on room.1", n.Method, n.Params, method, want)
		}
	}
	wantPresence("rpc.join")

	want := []hub.PeerInfo{{ID: watcher.id, User: "ann", Node: "a"}, {ID: member.id, User: "bob", Node: "b"}}
	var got []hub.PeerInfo
	testkit.WaitFor(t, "a to see b's peer in presence", func() bool {
		var err error
		got, err = a.h.ClusterPresence(ctxFor(t), "room.1")
		return err == nil && slices.Equal(got, want)
	})
	var res struct{ Peers []hub.PeerInfo }
	member.call(t, "rpc.presence", map[string]string{"topic": "room.1"}, &res)
	if !slices.Equal(res.Peers, want) {
		t.Fatalf("rpc.presence on b: %+v, want %+v", res.Peers, want)
	}

	member.call(t, "rpc.unsubscribe", []string{"room.*"}, nil)
	wantPresence("rpc.leave")
}

// calc is a provider's methods: calc.add, calc.fail (an error of its
// own), calc.wait (progress, then waits for its context to end, which it
// sends on ended).
func calc(started chan<- struct{}, ended chan<- error) *peer.Mux {
	mux := peer.NewMux()
	mux.Handle("calc.add", peer.Func(func(_ context.Context, p []int) (int, error) {
		sum := 0
		for _, x := range p {
			sum += x
		}
		return sum, nil
	}))
	mux.Handle("calc.fail", peer.HandlerFunc(func(context.Context, *peer.Request) (any, error) {
		return nil, &peer.Error{Code: 4001, Message: "declined", Data: json.RawMessage(`{"retry":false}`)}
	}))
	mux.Handle("calc.wait", peer.HandlerFunc(func(ctx context.Context, _ *peer.Request) (any, error) {
		if err := peer.Progress(ctx, "started"); err != nil {
			return nil, err
		}
		started <- struct{}{}
		<-ctx.Done()
		ended <- ctx.Err()
		return nil, ctx.Err()
	}))
	return mux
}

// provideCalc joins a provider of calc.* to n, and waits until the
// Directory of every other node knows of it.
func provideCalc(t *testing.T, n *node, others ...*node) (prov *client, started chan struct{}, ended chan error) {
	t.Helper()
	started, ended = make(chan struct{}, 1), make(chan error, 1)
	prov = n.join(t, "prov", calc(started, ended))
	prov.call(t, "rpc.provide", map[string]any{"methods": []string{"calc.*"}}, nil)
	for _, o := range others {
		d := o.b.(hub.Directory)
		testkit.WaitFor(t, o.name+" to know "+n.name+"'s provider", func() bool { return d.Provides("calc.add") })
	}
	return prov, started, ended
}

// testRoutedCalls: a method provided on one node is called from another:
// its result and its errors come back unchanged, its progress reaches the
// caller, the caller's cancel reaches the provider; once withdrawn, it is
// -32601.
func testRoutedCalls(t *testing.T, start StartNode) {
	a, b := startNode(t, start, "a"), startNode(t, start, "b")
	prov, started, ended := provideCalc(t, a, b)
	caller := b.join(t, nil, nil)

	var sum int
	caller.call(t, "calc.add", []int{1, 2, 3}, &sum)
	if sum != 6 {
		t.Fatalf("calc.add = %d, want 6", sum)
	}
	err := caller.Call(ctxFor(t), "calc.fail", nil, nil)
	if e, ok := errors.AsType[*peer.Error](err); !ok || e.Code != 4001 || e.Message != "declined" || string(e.Data) != `{"retry":false}` {
		t.Fatalf("calc.fail: %v, want the provider's error unchanged", err)
	}

	progress := make(chan string, 1)
	ctx, cancel := context.WithCancel(ctxFor(t))
	defer cancel()
	ctx = peer.WithProgress(ctx, func(data json.RawMessage) {
		progress <- string(data)
		cancel()
	})
	if err := caller.Call(ctx, "calc.wait", nil, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("calc.wait cancelled: %v", err)
	}
	testkit.Recv(t, started, "the provider to start")
	if got := testkit.Recv(t, progress, "progress"); got != `"started"` {
		t.Fatalf("progress %s, want \"started\"", got)
	}
	if err := testkit.Recv(t, ended, "the provider's context to end"); !errors.Is(err, context.Canceled) {
		t.Fatalf("the provider's context ended with %v, want it cancelled", err)
	}

	prov.call(t, "rpc.unprovide", map[string]any{"methods": []string{"calc.*"}}, nil)
	d := b.b.(hub.Directory)
	testkit.WaitFor(t, "b to know a's provider withdrew", func() bool { return !d.Provides("calc.add") })
	wantCode(t, "calc.add withdrawn", caller.Call(ctxFor(t), "calc.add", []int{1}, nil), peer.CodeMethodNotFound)
}

// testProviderLost: a call in flight to a provider on another node that
// disconnects ends with -32006.
func testProviderLost(t *testing.T, start StartNode) {
	a, b := startNode(t, start, "a"), startNode(t, start, "b")
	prov, started, _ := provideCalc(t, a, b)
	caller := b.join(t, nil, nil)
	errc := make(chan error, 1)
	go func() { errc <- caller.Call(ctxFor(t), "calc.wait", nil, nil) }()
	testkit.Recv(t, started, "the provider to start")
	prov.Close()
	wantCode(t, "calc.wait of a provider lost", testkit.Recv(t, errc, "the call to end"), peer.CodeProviderLost)
}

// testAddressedCalls: Go code on one node lists the peers of the other
// and calls one by its id, as rpc.call does; an unknown id is -32007; a
// result larger than the caller can take is not sent back.
func testAddressedCalls(t *testing.T, start StartNode) {
	a, b := startNode(t, start, "a"), startNode(t, start, "b")
	mux := peer.NewMux()
	mux.Handle("who", peer.Func(func(context.Context, struct{}) (string, error) { return "ann's peer", nil }))
	big := strings.Repeat("x", 1000)
	mux.Handle("big", peer.Func(func(context.Context, struct{}) (string, error) { return big, nil }))
	target := a.join(t, "ann", mux)
	testkit.WaitFor(t, "b to list a's peer", func() bool {
		peers, err := b.h.ClusterPeers(ctxFor(t))
		return err == nil && slices.Contains(peers, hub.PeerInfo{ID: target.id, User: "ann", Node: "a"})
	})

	var who string
	if err := b.h.CallPeer(ctxFor(t), target.id, "who", nil, &who); err != nil || who != "ann's peer" {
		t.Fatalf("CallPeer: %q, %v", who, err)
	}
	wantCode(t, "CallPeer of no peer", b.h.CallPeer(ctxFor(t), "no-such-peer", "who", nil, nil), peer.CodeNoSuchPeer)
	caller := b.join(t, nil, nil)
	who = ""
	caller.call(t, "rpc.call", map[string]any{"peer": target.id, "method": "who"}, &who)
	if who != "ann's peer" {
		t.Fatalf("rpc.call: %q", who)
	}

	d := b.b.(hub.Directory)
	if _, err := d.Route(ctxFor(t), hub.RemoteCall{Method: "big", Peer: target.id, MaxResult: 100}); !errors.Is(err, hub.ErrTooLarge) {
		t.Fatalf("Route of a result over MaxResult: %v, want ErrTooLarge", err)
	}
	res, err := d.Route(ctxFor(t), hub.RemoteCall{Method: "big", Peer: target.id, MaxResult: 2000})
	if err != nil || len(res) != len(big)+2 {
		t.Fatalf("Route within MaxResult: %d bytes, %v", len(res), err)
	}
}

// testUserPeers: a node finds the peers of a user on the other
// (Directory.UserPeers), and none of another user; an rpc.call of the
// user reaches its peers on both nodes, complete.
func testUserPeers(t *testing.T, start StartNode) {
	a, b := startNode(t, start, "a"), startNode(t, start, "b")
	where := func(node string) *peer.Mux {
		mux := peer.NewMux()
		mux.Handle("where", peer.Func(func(context.Context, struct{}) (string, error) { return node, nil }))
		return mux
	}
	ann := a.join(t, "ann", where("a"))
	a.join(t, "bob", where("a"))
	b.join(t, "ann", where("b"))
	d := b.b.(hub.Directory)
	want := []hub.PeerInfo{{ID: ann.id, User: "ann", Node: "a"}}
	testkit.WaitFor(t, "b to find ann's peer on a", func() bool {
		peers, err := d.UserPeers(ctxFor(t), "ann")
		return err == nil && slices.Equal(peers, want)
	})
	if peers, err := d.UserPeers(ctxFor(t), "carl"); err != nil || len(peers) != 0 {
		t.Fatalf("UserPeers of a user with no peer on a: %+v, %v", peers, err)
	}

	caller := b.join(t, "carl", nil)
	var all struct {
		Results []struct {
			Peer   hub.PeerInfo
			Result string
		}
		Incomplete bool
	}
	caller.call(t, "rpc.call", map[string]any{"user": "ann", "method": "where"}, &all)
	var got []string
	for _, r := range all.Results {
		if r.Peer.User != "ann" || r.Result != r.Peer.Node {
			t.Fatalf("entry %+v", r)
		}
		got = append(got, r.Result)
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"a", "b"}) || all.Incomplete {
		t.Fatalf("rpc.call of ann from b: answered from %v, incomplete %v; want a and b, complete", got, all.Incomplete)
	}
}

// testRouteFunc: Directory.RouteFunc calls a peer of the other node and
// hands its result or error to done, -32007 for no such peer; when ctx's
// deadline passes, done gets it and the peer's call is cancelled.
func testRouteFunc(t *testing.T, start StartNode) {
	a, b := startNode(t, start, "a"), startNode(t, start, "b")
	started, ended := make(chan struct{}, 1), make(chan error, 1)
	target := a.join(t, "ann", calc(started, ended))
	testkit.WaitFor(t, "b to list a's peer", func() bool {
		peers, err := b.h.ClusterPeers(ctxFor(t))
		return err == nil && slices.Contains(peers, hub.PeerInfo{ID: target.id, User: "ann", Node: "a"})
	})
	d := b.b.(hub.Directory)
	type outcome struct {
		res string
		err error
	}
	route := func(ctx context.Context, method, id string, params json.RawMessage) <-chan outcome {
		ch := make(chan outcome, 1)
		d.RouteFunc(ctx, hub.RemoteCall{Method: method, Params: params, Peer: id, Node: "a"}, func(res json.RawMessage, err error) {
			ch <- outcome{string(res), err}
		})
		return ch
	}
	if o := testkit.Recv(t, route(ctxFor(t), "calc.add", target.id, json.RawMessage(`[1,2]`)), "calc.add"); o.res != "3" || o.err != nil {
		t.Fatalf("calc.add: %+v", o)
	}
	o := testkit.Recv(t, route(ctxFor(t), "calc.fail", target.id, nil), "calc.fail")
	if e, ok := errors.AsType[*peer.Error](o.err); !ok || e.Code != 4001 || string(e.Data) != `{"retry":false}` {
		t.Fatalf("calc.fail: %+v, want the peer's error unchanged", o)
	}
	wantCode(t, "no such peer", testkit.Recv(t, route(ctxFor(t), "calc.add", "no-such-peer", nil), "no such peer").err, peer.CodeNoSuchPeer)

	ctx, cancel := context.WithTimeout(ctxFor(t), 100*time.Millisecond)
	defer cancel()
	done := route(ctx, "calc.wait", target.id, nil)
	testkit.Recv(t, started, "the peer to start")
	// The deadline, or the peer's node's -32003 for the same deadline,
	// whichever comes first.
	o = testkit.Recv(t, done, "calc.wait past its deadline")
	if e, ok := errors.AsType[*peer.Error](o.err); !errors.Is(o.err, context.DeadlineExceeded) && (!ok || e.Code != peer.CodeTimeout) {
		t.Fatalf("calc.wait past its deadline: %v", o.err)
	}
	if err := testkit.Recv(t, ended, "the peer's call to end"); err == nil {
		t.Fatal("the peer's call ended without an error")
	}
}

// testDescribe: rpc.discover on one node describes the methods provided
// on the other, as their provider does.
func testDescribe(t *testing.T, start StartNode) {
	a, b := startNode(t, start, "a"), startNode(t, start, "b")
	provideCalc(t, a, b)
	caller := b.join(t, nil, nil)
	var doc struct {
		Methods []struct{ Name string }
	}
	caller.call(t, "rpc.discover", nil, &doc)
	var names []string
	for _, m := range doc.Methods {
		names = append(names, m.Name)
	}
	for _, want := range []string{"calc.add", "calc.fail", "calc.wait"} {
		if !slices.Contains(names, want) {
			t.Fatalf("rpc.discover on b lists %v, want %s of a's provider", names, want)
		}
	}
}
