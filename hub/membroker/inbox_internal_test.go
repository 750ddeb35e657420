package membroker

import (
	"testing"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

// A node's queue holds at most Options.Queue bytes: what comes beyond is
// counted lost, and the node's hub is told it missed events.
func TestQueueBound(t *testing.T) {
	var q inbox
	q.kick = make(chan struct{}, 1)
	it := item{topic: "q.x", data: []byte("1")}
	for range 3 {
		q.push(it, 2*it.size())
	}
	items, lost := q.take(nil)
	if len(items) != 2 || lost != 1 {
		t.Fatalf("a queue of 2 items' bytes took %d items, %d lost; want 2 and 1", len(items), lost)
	}
	q.push(item{topic: "q.x", data: make([]byte, 1000)}, 999)
	if items, lost := q.take(nil); len(items) != 0 || lost != 1 {
		t.Fatalf("an event larger than the queue: %d items, %d lost; want it lost", len(items), lost)
	}

	c := New(nil)
	b := c.Node("b")
	defer b.Close()
	h := hub.New(&hub.Options{Broker: b.HubBroker()})
	for range 5 {
		b.in.push(item{topic: "q.x", data: []byte("1")}, 0) // a queue always full
	}
	testkit.WaitFor(t, "5 events counted lost", func() bool { return h.Stats().Cluster.Lost == 5 })
	if st := h.Stats().Cluster; st.Received != 0 {
		t.Fatalf("stats %+v: events of a full queue received", st)
	}
}
