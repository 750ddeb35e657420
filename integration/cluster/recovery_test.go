package cluster_test

import (
	"strconv"
	"sync"
	"testing"

	"github.com/switchboard-rpc/switchboard/client"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

// TestResumeOnAnotherNode: with JetStream, positions are the same on
// every node, so a subscriber that leaves one node resumes on another
// with every event it missed, once, and goes on live.
func TestResumeOnAnotherNode(t *testing.T) {
	ns := startNATS(t)
	hubs := startNodes(t, ns, 3, "-nats-jetstream")
	pub := dial(t, hubs[0])

	first := dial(t, hubs[1])
	sub, ch := subscribe(t, first, "r.>", client.Position{}, 100)
	for n := 1; n <= 20; n++ {
		publish(t, pub, "r.x", n)
	}
	var last received
	for n := 1; n <= 20; n++ {
		if last = testkit.RecvSlow(t, ch, "an event"); last.data != strconv.Itoa(n) {
			t.Fatalf("event %+v, want %d", last, n)
		}
	}
	pos := sub.Position()
	if pos.Seq != last.seq {
		t.Fatalf("subscription at %v, its last event at %d", pos, last.seq)
	}
	_ = first.Close()
	for n := 21; n <= 40; n++ {
		publish(t, pub, "r.x", n) // missed by the subscriber
	}

	_, ch = subscribe(t, dial(t, hubs[2]), "r.>", pos, 100)
	for n := 21; n <= 40; n++ {
		r := testkit.RecvSlow(t, ch, "an event")
		if r.missed || r.data != strconv.Itoa(n) {
			t.Fatalf("resumed on n3: %+v, want %d", r, n)
		}
	}
	publish(t, pub, "r.x", 41)
	if r := testkit.RecvSlow(t, ch, "an event"); r.data != "41" {
		t.Fatalf("live on n3: %+v, want 41", r)
	}
}

// TestNodeKilled: a publisher keeps publishing on n1 while the node of a
// subscriber, n2, is killed with SIGKILL; the subscriber connects to n3
// and resumes from the last event it took: together, its two
// subscriptions saw every event once, in order.
func TestNodeKilled(t *testing.T) {
	ns := startNATS(t)
	hubs := startNodes(t, ns, 3, "-nats-jetstream")
	const total = 600
	pub := dial(t, hubs[0])
	sub, ch := subscribe(t, dial(t, hubs[1]), "k.x", client.Position{}, total)

	var wg sync.WaitGroup
	wg.Go(func() {
		for n := 1; n <= total; n++ {
			if _, err := pub.Publish(t.Context(), "k.x", n); err != nil {
				t.Errorf("publish %d: %v", n, err)
				return
			}
		}
	})
	taken := 0
	for taken < total/4 {
		if r := testkit.RecvSlow(t, ch, "an event"); r.data != strconv.Itoa(taken+1) {
			t.Fatalf("event %+v, want %d", r, taken+1)
		}
		taken++
	}
	hubs[1].Kill()
	// What the handler took before the kill, and where it stood. The
	// events it had not taken yet come again on n3.
	pos := sub.Position()
	for len(ch) > 0 {
		r := <-ch
		if r.data != strconv.Itoa(taken+1) {
			t.Fatalf("event %+v, want %d", r, taken+1)
		}
		taken++
	}
	if pos.Seq == 0 {
		t.Fatal("no position before the kill")
	}

	_, ch = subscribe(t, dial(t, hubs[2]), "k.x", pos, total)
	// The position may be of an event before the last one taken (the
	// handler may take more before Position is read): start from the
	// event after pos, whatever was taken, and then every event to the
	// end must follow in order.
	r := testkit.RecvSlow(t, ch, "an event")
	if r.missed || r.seq != pos.Seq+1 {
		t.Fatalf("resuming on n3 from %v: %+v, want the event after it", pos, r)
	}
	n, _ := strconv.Atoi(r.data)
	if n > taken+1 {
		t.Fatalf("resumed on n3 at %d, after %d taken: %d lost", n, taken, n-taken-1)
	}
	for ; n < total; n++ {
		r := testkit.RecvSlow(t, ch, "an event")
		if r.missed || r.data != strconv.Itoa(n+1) {
			t.Fatalf("on n3 after %d: %+v", n, r)
		}
	}
	wg.Wait()
	publish(t, pub, "k.x", "end")
	if r := testkit.RecvSlow(t, ch, "an event"); r.data != `"end"` {
		t.Fatalf("after the last: %+v, want the end", r)
	}
}
