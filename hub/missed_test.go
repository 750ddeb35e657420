package hub_test

import (
	"context"
	"slices"
	"testing"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
)

// missedNote is the params of an rpc.missed a peer received.
type missedNote struct {
	Topics []string `json:"topics"`
	Epoch  string   `json:"epoch"`
	Seq    uint64   `json:"seq"`
}

// connectMissed connects a peer that records its rpc.event and rpc.missed
// notifications, in order, on one channel each.
func connectMissed(t *testing.T, h *hub.Hub) (*client, <-chan missedNote) {
	t.Helper()
	events := make(chan event, 100)
	notes := make(chan missedNote, 10)
	ev := eventRouter(events)
	c := connect(t, h, nil, routerFunc(func(method string) (peer.Handler, peer.Mode) {
		if method != "rpc.missed" {
			return ev.Lookup(method)
		}
		return peer.Func(func(_ context.Context, n missedNote) (any, error) {
			notes <- n
			return nil, nil
		}), peer.Inline
	}))
	c.events = events
	return c, notes
}

// TestMissedTopicsTellsOnlyTheirSubscribers: rpc.missed reaches the
// peers subscribed to a pattern matching a topic that lost events, naming
// those patterns, after the events delivered before; the others are not
// told, and no connection is closed. A resume from before says
// recovered: false.
func TestMissedTopicsTellsOnlyTheirSubscribers(t *testing.T) {
	r := &relay{}
	h := hub.New(&hub.Options{Policy: hub.AllowAll, Broker: r})
	lost, lostNotes := connectMissed(t, h)
	subscribe2(t, lost, []string{"m.lost", "m.*", "other"})
	kept, keptNotes := connectMissed(t, h)
	subscribe2(t, kept, []string{"m.kept"})
	r.h.Deliver("m.lost", []byte("1"))
	before := h.Position()

	if n := r.h.MissedTopics([]string{"m.lost"}); n != 1 {
		t.Fatalf("MissedTopics told %d peers, want 1", n)
	}
	if e := lost.next(t); e.Seq != before.Seq {
		t.Fatalf("event %+v before rpc.missed, want seq %d", e, before.Seq)
	}
	n := testkit.Recv(t, lostNotes, "rpc.missed")
	if want := []string{"m.*", "m.lost"}; !slices.Equal(n.Topics, want) || n.Epoch != before.Epoch || n.Seq != before.Seq {
		t.Fatalf("rpc.missed %+v, want topics %v at %v", n, want, before)
	}
	// The told peer resumes on the same connection: not everything is there.
	if res := subscribeSince(t, lost, "m.lost", before); *res.Recovered {
		t.Fatal("recovered true after events were missed")
	}
	// An event after it comes after any rpc.missed: none came.
	r.h.Deliver("m.kept", []byte("2"))
	if e := kept.next(t); string(e.Data) != "2" {
		t.Fatalf("kept got %+v", e)
	}
	select {
	case n := <-keptNotes:
		t.Fatalf("a subscriber of another topic was told: %+v", n)
	default:
	}
	// No topics: every subscriber is told of all its patterns.
	if n := r.h.MissedTopics(nil); n != 2 {
		t.Fatalf("MissedTopics(nil) told %d peers, want 2", n)
	}
	if n := testkit.Recv(t, keptNotes, "rpc.missed"); !slices.Equal(n.Topics, []string{"m.kept"}) {
		t.Fatalf("rpc.missed %+v, want m.kept", n)
	}
}
