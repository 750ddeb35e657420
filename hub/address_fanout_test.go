package hub_test

import (
	"bytes"
	"context"
	"runtime"
	"testing"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/peer"
)

// A call of a user's 200 peers holds no goroutine of the hub's per peer
// while they answer: one goroutine, its handler's, is in the call.
func TestAddressUserNoGoroutinePerPeer(t *testing.T) {
	const n = 200
	h := hub.New(&hub.Options{Policy: hub.AllowAll})
	started, release := make(chan struct{}, n), make(chan struct{})
	held := routerFunc(func(string) (peer.Handler, peer.Mode) {
		return peer.HandlerFunc(func(context.Context, *peer.Request) (any, error) {
			started <- struct{}{}
			<-release
			return "done", nil
		}), peer.Concurrent
	})
	for range n {
		connect(t, h, "alice", held)
	}
	caller := connect(t, h, "bob", nil)
	type answer struct {
		res peerResults
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		var res peerResults
		err := caller.Call(context.Background(), "rpc.call", map[string]any{"user": "alice", "method": "hold"}, &res)
		answered <- answer{res, err}
	}()
	for range n {
		recvOne(t, started)
	}
	inCall := goroutinesIn("hub.(*Hub).callPeers")
	close(release)
	a := recvOne(t, answered)
	if a.err != nil || len(a.res.Results) != n {
		t.Fatalf("%d results, %v", len(a.res.Results), a.err)
	}
	for _, r := range a.res.Results {
		if r.Error != nil || string(r.Result) != `"done"` {
			t.Fatalf("entry %+v", r)
		}
	}
	if inCall != 1 {
		t.Fatalf("%d goroutines in the hub's call of %d peers, want 1: the handler's own", inCall, n)
	}
}

// goroutinesIn counts the goroutines with fn on their stack.
func goroutinesIn(fn string) int {
	buf := make([]byte, 1<<20)
	for {
		if n := runtime.Stack(buf, true); n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for g := range bytes.SplitSeq(buf, []byte("\n\n")) {
		if bytes.Contains(g, []byte(fn)) {
			count++
		}
	}
	return count
}

func recvOne[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-t.Context().Done():
		t.Fatal("the test ended first")
	}
	var zero T
	return zero
}
