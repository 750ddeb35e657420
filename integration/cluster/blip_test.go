package cluster_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/client"
	"github.com/switchboard-rpc/switchboard/integration/internal/hubproc"
	"github.com/switchboard-rpc/switchboard/integration/internal/netcut"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

// blipTopics and blipSubscribers shape the blip tests: on each node, that
// many subscribers of each topic, each a client of its own.
const (
	blipTopics      = 10
	blipSubscribers = 3 // "peers_told":3 below
	blipEvents      = 5 // published on topic b.0 during the blip
)

// blipClient is one subscriber of the blip tests.
type blipClient struct {
	node, topic int
	ch          <-chan received
	states      *[3]atomic.Int32 // its client's states: connecting, connected, any other
}

// TestNATSBlip: in core-NATS mode, node n3's link to NATS breaks for a
// moment while n1 publishes on one topic. Once the link is back, n3 finds
// the gap in n1's events at once (not at a heartbeat), learns from n1
// which topic they were on, and tells only the subscribers of that topic
// (rpc.missed), which resume on their connections and get a Missed
// event; no connection is closed, the subscribers of the other topics
// and of the other nodes are told nothing and miss nothing.
func TestNATSBlip(t *testing.T) {
	testBlip(t, false)
}

// TestNATSBlipJetStream: the same blip with JetStream: n3 reads from the
// stream what it did not get meanwhile, and nobody is told anything.
func TestNATSBlipJetStream(t *testing.T) {
	testBlip(t, true)
}

func testBlip(t *testing.T, jetStream bool) {
	ns := startNATS(t)
	cut := netcut.Start(t, strings.TrimPrefix(ns.URL(), "nats://"))
	var extra []string
	if jetStream {
		extra = []string{"-nats-jetstream"}
	}
	hubs := make([]*hubproc.Hub, 3)
	for i := range hubs {
		url := ns.URL()
		if i == 2 {
			url = "nats://" + cut.Addr() // n3 reaches NATS through the cut
		}
		hubs[i] = hubproc.Start(t, &hubproc.Options{
			Args: append([]string{"-demo", "-nats", url, "-node", nodeName(i)}, extra...),
		})
	}
	for i, h := range hubs {
		waitLinked(t, h, i, true)
	}
	pub := dial(t, hubs[0])

	var subs []blipClient
	for node, h := range hubs {
		for topic := range blipTopics {
			for range blipSubscribers {
				states := new([3]atomic.Int32)
				ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
				c, err := client.Dial(ctx, h.WebSocketURL(), &client.Options{OnState: func(s client.State, _ error) {
					switch s {
					case client.StateConnecting:
						states[0].Add(1)
					case client.StateConnected:
						states[1].Add(1)
					default:
						states[2].Add(1)
					}
				}})
				cancel()
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = c.Close() })
				_, ch := subscribe(t, c, fmt.Sprintf("b.%d", topic), client.Position{}, 2*blipEvents+2)
				subs = append(subs, blipClient{node, topic, ch, states})
			}
		}
	}
	// Every node has every subscriber, as far as n1's events go.
	waitAllGet(t, pub, subs, "ready")

	cut.Block()
	waitLinked(t, hubs[2], 2, false)
	for i := range blipEvents {
		publish(t, pub, "b.0", i)
	}
	cut.Unblock()
	waitLinked(t, hubs[2], 2, true)
	if !jetStream {
		// n3 finds the gap, and tells the subscribers of b.0 (its log
		// says how many), once the link is back: not at a heartbeat.
		testkit.WaitFor(t, "n3 to tell b.0's 3 subscribers", func() bool {
			return strings.Contains(hubs[2].Log(), `"peers_told":3`)
		})
	}
	waitAllGet(t, pub, subs, "after")
	for _, s := range subs {
		// Each got, since "ready", the blip's events when it is not n3's
		// (or with JetStream), or else a Missed, then "after"; nothing
		// else.
		var got []string
		for len(got) == 0 || got[len(got)-1] != `"after"` {
			r := testkit.RecvSlow(t, s.ch, "an event")
			if r.missed {
				r.data = "missed"
			}
			got = append(got, r.data)
		}
		want := []string{`"after"`}
		switch {
		case s.topic != 0:
		case s.node != 2 || jetStream:
			want = []string{"0", "1", "2", "3", "4", `"after"`}
		default:
			want = []string{"missed", `"after"`}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("n%d's subscriber of b.%d got %v, want %v", s.node+1, s.topic, got, want)
		}
		// OnState comes on a goroutine of the client's, a little late,
		// but not seconds late: by now, one connection and no other state.
		if c, d, o := s.states[0].Load(), s.states[1].Load(), s.states[2].Load(); c != 1 || d != 1 || o != 0 {
			t.Fatalf("n%d's subscriber of b.%d: %d connecting, %d connected, %d other states: its connection did not stay",
				s.node+1, s.topic, c, d, o)
		}
	}
	// And no hub saw a connection go (the clients close theirs after this).
	for i, h := range hubs {
		if strings.Contains(h.Log(), "peer disconnected") {
			t.Fatalf("n%d saw a peer disconnect during the blip", i+1)
		}
	}
}

// waitAllGet publishes data on every topic from c and waits until every
// subscriber got it (after a Missed, for n3's subscribers of b.0 told
// already).
func waitAllGet(t *testing.T, c *client.Client, subs []blipClient, data string) {
	t.Helper()
	for topic := range blipTopics {
		publish(t, c, fmt.Sprintf("b.%d", topic), data)
	}
	if data != "ready" {
		return // the caller reads them
	}
	for _, s := range subs {
		if r := testkit.RecvSlow(t, s.ch, "ready"); r.missed || r.data != `"ready"` {
			t.Fatalf("n%d's subscriber of b.%d got %+v, want ready", s.node+1, s.topic, r)
		}
	}
}
