package client

import (
	"context"
	"encoding/json"
	"errors"
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
