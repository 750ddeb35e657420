package cluster_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/switchboard-rpc/switchboard/client"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
)

// TestNATSRestart: while NATS is down, each node delivers the events
// published on it to its own subscribers only, and says so in its log,
// metrics and /readyz; once NATS is back, events cross nodes again, the
// subscribers of each node are told they missed the other's events of
// the outage (a defect: they were told nothing), and a subscription
// resuming from before the outage is told it missed events.
func TestNATSRestart(t *testing.T) {
	ns := startNATS(t)
	hubs := startNodes(t, ns, 2)
	c1, c2 := dial(t, hubs[0]), dial(t, hubs[1])
	_, ch1 := subscribe(t, c1, "o.x", client.Position{}, 10)
	sub2, ch2 := subscribe(t, c2, "o.x", client.Position{}, 10)

	publish(t, c1, "o.x", "before")
	for _, ch := range []<-chan received{ch1, ch2} {
		if r := testkit.RecvSlow(t, ch, "an event"); r.data != `"before"` {
			t.Fatalf("before the outage: %+v", r)
		}
	}
	before := sub2.Position()

	ns.stop()
	for i, h := range hubs {
		waitLinked(t, h, i, false)
		waitReady(t, h, http.StatusServiceUnavailable) // out of a balancer's rotation
	}
	publish(t, c1, "o.x", "only-n1")
	publish(t, c2, "o.x", "only-n2")
	if r := testkit.RecvSlow(t, ch1, "an event"); r.data != `"only-n1"` {
		t.Fatalf("n1 during the outage: %+v", r)
	}
	if r := testkit.RecvSlow(t, ch2, "an event"); r.data != `"only-n2"` {
		t.Fatalf("n2 during the outage: %+v", r)
	}

	ns.start()
	for i, h := range hubs {
		waitLinked(t, h, i, true)
		waitReady(t, h, http.StatusOK)
	}
	publish(t, c2, "o.x", "after")
	// Each node notices that it missed the other's event of the outage (n1
	// when n2's next event comes, n2 when n1's next mark of its latest
	// event does), and tells its subscribers of o.x (rpc.missed), which
	// resume on their connections.
	for i, h := range hubs {
		lost := fmt.Sprintf(`switchboard_cluster_events_total{direction="lost",node=%q}`, nodeName(i))
		h.WaitMetrics(lost+" 1", func(m map[string]float64) bool { return m[lost] == 1 })
	}
	publish(t, c1, "o.x", "later")
	for i, ch := range []<-chan received{ch1, ch2} {
		// Each gets both events, and is told before the second that it
		// missed events; the other node's event of the outage never comes.
		var got []string
		missed := false
		for len(got) < 2 {
			switch r := testkit.RecvSlow(t, ch, "an event"); {
			case r.missed:
				missed = true
			case r.data == `"later"` && !missed:
				t.Fatalf("n%d: later came before a missed notice", i+1)
			default:
				got = append(got, r.data)
			}
		}
		if got[0] != `"after"` || got[1] != `"later"` {
			t.Fatalf("n%d after the outage: %v, want after, later", i+1, got)
		}
	}
	for i, h := range hubs {
		log := h.Log()
		if !strings.Contains(log, "cluster link lost") || !strings.Contains(log, "cluster link restored") {
			t.Fatalf("n%d's log does not tell the outage:\n%s", i+1, log)
		}
		m := h.Metrics()
		if d := m[`switchboard_cluster_disconnects_total{node="`+nodeName(i)+`"}`]; d != 1 {
			t.Errorf("n%d counted %v disconnects, want 1", i+1, d)
		}
	}

	// n2 cannot know what n1 published during the outage: resuming from
	// before it is not complete.
	_, ch := subscribe(t, dial(t, hubs[1]), "o.x", before, 10)
	if r := testkit.RecvSlow(t, ch, "an event"); !r.missed {
		t.Fatalf("resumed on n2 from before the outage: %+v, want missed first", r)
	}
}

// TestNATSRestartJetStream: with JetStream, publishing fails while NATS
// is down (an event would have no position), and once NATS is back with
// its files, every node reads the stream on from where it stopped:
// subscribers get what follows, nothing twice, nothing lost.
func TestNATSRestartJetStream(t *testing.T) {
	ns := startNATS(t)
	hubs := startNodes(t, ns, 2, "-nats-jetstream")
	c1, c2 := dial(t, hubs[0]), dial(t, hubs[1])
	_, ch2 := subscribe(t, c2, "oj.x", client.Position{}, 10)
	publish(t, c1, "oj.x", 1)
	first := testkit.RecvSlow(t, ch2, "an event")
	if first.data != "1" {
		t.Fatalf("before the outage: %+v", first)
	}

	ns.stop()
	for i, h := range hubs {
		waitLinked(t, h, i, false)
	}
	var perr *peer.Error
	if _, err := c1.Publish(t.Context(), "oj.x", "lost"); !errors.As(err, &perr) || perr.Code != peer.CodeApplication {
		t.Fatalf("publish without NATS: %v, want -32000", err)
	}

	ns.start()
	for i, h := range hubs {
		waitLinked(t, h, i, true)
	}
	publish(t, c1, "oj.x", 2)
	publish(t, c2, "oj.x", 3)
	for _, want := range []string{"2", "3"} {
		r := testkit.RecvSlow(t, ch2, "an event")
		if r.missed || r.data != want || r.epoch != first.epoch {
			t.Fatalf("after the outage: %+v, want %s in epoch %s", r, want, first.epoch)
		}
	}
}
