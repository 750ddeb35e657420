package cluster_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/switchboard-rpc/switchboard/client"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

// TestFanOutAcrossNodes: three nodes, a publisher on each publishing on
// two topics at once, subscribers on every node: each subscriber gets
// every event of its pattern exactly once, and each publisher's events
// of a topic in the order it published them.
func TestFanOutAcrossNodes(t *testing.T) {
	ns := startNATS(t)
	hubs := startNodes(t, ns, 3)
	const perTopic = 200
	topics := []string{"c.a", "c.b"}

	type subscriber struct {
		name   string
		events <-chan received
		want   int
	}
	var subs []subscriber
	for i, h := range hubs {
		_, ch := subscribe(t, dial(t, h), "c.>", client.Position{}, 2*len(hubs)*perTopic+1)
		subs = append(subs, subscriber{fmt.Sprintf("c.> on %s", nodeName(i)), ch, len(hubs) * len(topics) * perTopic})
	}
	_, ch := subscribe(t, dial(t, hubs[2]), "c.a", client.Position{}, len(hubs)*perTopic+1)
	subs = append(subs, subscriber{"c.a on n3", ch, len(hubs) * perTopic})

	var wg sync.WaitGroup
	for i, h := range hubs {
		pub := dial(t, h)
		wg.Go(func() {
			for n := range perTopic {
				for _, topic := range topics {
					if _, err := pub.Publish(t.Context(), topic, fmt.Sprintf("%s/%s/%d", nodeName(i), topic, n)); err != nil {
						t.Errorf("publish on %s: %v", nodeName(i), err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	for _, s := range subs {
		expect := map[string]int{} // publisher/topic -> the next number expected
		for range s.want {
			r := testkit.RecvSlow(t, s.events, "an event")
			var d string
			if err := json.Unmarshal([]byte(r.data), &d); err != nil {
				t.Fatalf("%s: event data %s: %v", s.name, r.data, err)
			}
			var node, topic string
			var n int
			if _, err := fmt.Sscanf(d, "%2s/%3s/%d", &node, &topic, &n); err != nil || topic != r.topic {
				t.Fatalf("%s: event %+v: %v", s.name, r, err)
			}
			key := node + "/" + topic
			if n != expect[key] {
				t.Fatalf("%s: %s after %d events of %s: lost, twice or out of order", s.name, d, expect[key], key)
			}
			expect[key]++
		}
	}
	// Nothing more came: the next event each gets is the one published
	// now.
	publish(t, dial(t, hubs[0]), "c.a", "end")
	for _, s := range subs {
		if r := testkit.RecvSlow(t, s.events, "an event"); r.data != `"end"` {
			t.Fatalf("%s: %+v after all it expected, want the end", s.name, r)
		}
	}
}
