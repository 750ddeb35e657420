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
	slow, events, gate := stuckPeer(t, h)
	defer close(gate)
	replayAll(t, h, slow)
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

// stuckPeer publishes 2000 events on h, more than a peer's queue takes,
// and connects a peer whose reader stops at its first event, which it
// sends on events, until gate is closed.
func stuckPeer(t *testing.T, h *hub.Hub) (slow *client, events <-chan event, gate chan struct{}) {
	t.Helper()
	for i := range 2000 {
		if _, err := h.Publish(ctx(t), "h", i); err != nil {
			t.Fatal(err)
		}
	}
	gate = make(chan struct{})
	first := make(chan event, 1)
	slow = connect(t, h, nil, routerFunc(func(method string) (peer.Handler, peer.Mode) {
		if method != "rpc.event" {
			return nil, peer.Concurrent
		}
		return peer.Func(func(_ context.Context, e event) (any, error) {
			select {
			case first <- e:
			default:
			}
			<-gate
			return nil, nil
		}), peer.Inline
	}))
	return slow, first, gate
}

// replayAll subscribes c to "h" from the start of h's stream. It is a
// notification: a peer that stops reading at its first event may get
// that before the result would come.
func replayAll(t *testing.T, h *hub.Hub, c *client) {
	t.Helper()
	if err := c.Notify(ctx(t), "rpc.subscribe", map[string]any{
		"topic": "h", "since": hub.Position{Epoch: h.Position().Epoch, Seq: 0},
	}); err != nil {
		t.Fatal(err)
	}
}
