package hub_test

import (
	"context"
	"strings"
	"testing"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
)

// TestHeldTooLarge: the live events held for a peer while its replay
// runs are bounded in bytes, not only in number: a peer whose replay is
// stuck while 20 events of 1 MB are published is closed as too slow.
func TestHeldTooLarge(t *testing.T) {
	h := hub.New(&hub.Options{Policy: hub.AllowAll})
	for i := range 2000 { // more than the slow peer's queue takes: its replay waits
		if _, err := h.Publish(ctx(t), "h", i); err != nil {
			t.Fatal(err)
		}
	}
	gate := make(chan struct{})
	events := make(chan event, 1)
	slow := connect(t, h, nil, routerFunc(func(method string) (peer.Handler, peer.Mode) {
		if method != "rpc.event" {
			return nil, peer.Concurrent
		}
		return peer.Func(func(_ context.Context, e event) (any, error) {
			select {
			case events <- e:
			default:
			}
			<-gate
			return nil, nil
		}), peer.Inline
	}))
	defer close(gate)
	if err := slow.Notify(ctx(t), "rpc.subscribe", map[string]any{
		"topic": "h", "since": hub.Position{Epoch: h.Position().Epoch, Seq: 0},
	}); err != nil {
		t.Fatal(err)
	}
	<-events // the replay has started, and its peer reads no more
	data := strings.Repeat("x", 1<<20)
	for range 20 {
		if _, err := h.Publish(ctx(t), "h", data); err != nil {
			t.Fatal(err)
		}
	}
	testkit.Recv(t, slow.p.Conn().Done(), "the slow peer to be closed")
	if st := h.Stats(); st.SlowClosed != 1 {
		t.Fatalf("Stats = %+v, want the slow peer closed", st)
	}
}
