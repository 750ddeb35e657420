package client

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/internal/hubtest"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
)

// A client calls another by id: progress reaches it, its deadline becomes
// the call's timeout (the peer is told to stop), and cancelling ctx
// cancels the call at the peer. CallPeers takes no peer id.
func TestCallPeer(t *testing.T) {
	h := hubtest.Start(t, nil)
	ended := make(chan error, 2)
	mux := peer.NewMux()
	mux.HandleFunc("work", func(ctx context.Context, _ *peer.Request) (any, error) {
		_ = peer.Progress(ctx, "half")
		<-ctx.Done()
		ended <- ctx.Err()
		return nil, ctx.Err()
	})
	target := dial(t, h.WS(), &Options{Router: mux})
	caller := dial(t, h.WS(), nil)
	me, err := target.WhoAmI(ctx(t))
	if err != nil {
		t.Fatal(err)
	}

	progress := make(chan string, 1)
	pctx := peer.WithProgress(ctx(t), func(data json.RawMessage) { progress <- string(data) })
	short, cancel := context.WithTimeout(pctx, 2*time.Second)
	defer cancel()
	err = caller.CallPeer(short, me.ID, "work", nil, nil)
	if got := testkit.Recv(t, progress, "progress"); got != `"half"` {
		t.Fatalf("progress %s", got)
	}
	var e *peer.Error
	if !(errors.As(err, &e) && e.Code == peer.CodeTimeout) && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a call past its deadline: %v", err)
	}
	if err := testkit.Recv(t, ended, "the peer's handler to end"); !errors.Is(err, context.Canceled) {
		t.Fatalf("the peer's handler ended with %v", err)
	}

	cctx, stop := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- caller.CallPeer(cctx, me.ID, "work", nil, nil) }()
	stop()
	if err := testkit.Recv(t, errc, "the cancelled call"); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled call: %v", err)
	}

	if _, err := caller.CallPeers(ctx(t), Address{Peer: me.ID}, "work", nil); err == nil {
		t.Fatal("CallPeers with a peer id: no error")
	}
	if _, err := caller.CallPeers(ctx(t), Address{}, "work", nil); err == nil {
		t.Fatal("CallPeers with no address: no error")
	}
}

// When the peers' answers do not all fit in one message of the hub's,
// CallPeers returns those that do, Truncated, and how many were asked;
// otherwise Asked is the number of results.
func TestCallPeersTruncated(t *testing.T) {
	const peers = 12 // 12 x 100 KB: over the hub's 1 MiB
	h := hubtest.Start(t, nil)
	big := strings.Repeat("x", 100_000)
	for range peers {
		mux := peer.NewMux()
		mux.HandleFunc("big", func(context.Context, *peer.Request) (any, error) { return big, nil })
		mux.HandleFunc("small", func(context.Context, *peer.Request) (any, error) { return "ok", nil })
		c := dial(t, h.WS(), &Options{Router: mux})
		if _, err := c.Subscribe(ctx(t), "room.big", func(Event) {}); err != nil {
			t.Fatal(err)
		}
	}
	caller := dial(t, h.WS(), nil)
	res, err := caller.CallPeers(ctx(t), Address{Topic: "room.big"}, "big", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Truncated || res.Asked != peers || len(res.Results) == 0 || len(res.Results) >= peers {
		t.Fatalf("truncated %v, asked %d, %d results; want true, %d, fewer", res.Truncated, res.Asked, len(res.Results), peers)
	}
	for _, r := range res.Results {
		var s string
		if err := r.Decode(&s); err != nil || s != big {
			t.Fatalf("a result of %d bytes: %v", len(s), err)
		}
	}
	res, err = caller.CallPeers(ctx(t), Address{Topic: "room.big"}, "small", nil)
	if err != nil || res.Truncated || res.Asked != peers || len(res.Results) != peers {
		t.Fatalf("small answers: truncated %v, asked %d, %d results, %v", res.Truncated, res.Asked, len(res.Results), err)
	}
}
