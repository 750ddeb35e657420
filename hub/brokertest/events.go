package brokertest

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// linked waits until an event published on each node has reached a
// subscriber on every node: then the nodes are linked.
func linked(t *testing.T, nodes ...*node) {
	t.Helper()
	subs := make([]*client, len(nodes))
	for i, n := range nodes {
		subs[i] = n.join(t, nil, nil)
		subs[i].call(t, "rpc.subscribe", []string{"brokertest.linked"}, nil)
	}
	for _, n := range nodes {
		if _, err := n.h.Publish(ctxFor(t), "brokertest.linked", n.name); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range subs {
		for range nodes {
			s.nextEvent(t)
		}
	}
}

// testEvents: events published on two nodes at once reach the
// subscribers of both, each once, in the order of their publisher, at
// increasing positions of the subscriber's node; with a Sequencer, at
// the same position on every node. The broker's counters say so.
func testEvents(t *testing.T, start StartNode, sequenced bool) {
	a, b := startNode(t, start, "a"), startNode(t, start, "b")
	linked(t, a, b)
	nodes := []*node{a, b}
	subs := []*client{a.join(t, nil, nil), b.join(t, nil, nil)}
	for _, s := range subs {
		s.call(t, "rpc.subscribe", []string{"ev.>"}, nil)
	}

	const n = 100
	var wg sync.WaitGroup
	ctx := ctxFor(t)
	for _, from := range nodes {
		wg.Go(func() {
			for i := range n {
				if _, err := from.h.Publish(ctx, "ev."+from.name, fmt.Sprintf("%s/%d", from.name, i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()

	at := make([]map[string]uint64, len(subs)) // per subscriber, the position of each event
	for k, s := range subs {
		epoch := nodes[k].h.Position().Epoch
		at[k] = make(map[string]uint64)
		next := map[string]int{}
		var last uint64
		for range len(nodes) * n {
			e := s.nextEvent(t)
			var d string
			_ = json.Unmarshal(e.Data, &d)
			origin, num, _ := strings.Cut(d, "/")
			i, err := strconv.Atoi(num)
			if err != nil || i != next[origin] || e.Topic != "ev."+origin {
				t.Fatalf("node %s: got %s on %s after %d of %s: not each once, in order", nodes[k].name, d, e.Topic, next[origin], origin)
			}
			next[origin]++
			if e.Seq <= last || e.Epoch != epoch {
				t.Fatalf("node %s: event %s at %d of epoch %q, after %d of %q", nodes[k].name, d, e.Seq, e.Epoch, last, epoch)
			}
			last = e.Seq
			at[k][d] = e.Seq
		}
	}
	if sequenced {
		if ea, eb := a.h.Position().Epoch, b.h.Position().Epoch; ea != eb {
			t.Fatalf("a Sequencer's nodes have epochs %q and %q", ea, eb)
		}
		for d, seq := range at[0] {
			if at[1][d] != seq {
				t.Fatalf("event %s at %d on a, %d on b", d, seq, at[1][d])
			}
		}
	}

	// Nothing more came, nothing twice: the next event is the one
	// published now.
	if _, err := a.h.Publish(ctxFor(t), "ev.end", "end"); err != nil {
		t.Fatal(err)
	}
	for k, s := range subs {
		if e := s.nextEvent(t); e.Topic != "ev.end" {
			t.Fatalf("node %s: got %s %s, want ev.end", nodes[k].name, e.Topic, e.Data)
		}
	}

	for _, nd := range nodes {
		st := nd.h.Stats().Cluster
		if st.Node != nd.name || !st.Connected || st.Sent < n || st.Received < n {
			t.Fatalf("node %s: cluster stats %+v, want its name, connected, %d sent and received at least", nd.name, st, n)
		}
	}
}

// testResume: a subscriber that left one node resumes on another. With a
// Sequencer, whose positions are the same on every node, it gets exactly
// what it missed, then live events at the same positions as on the first
// node. Without one, the other node's positions are its own: it is told
// it did not recover everything (another epoch), and gets what the node
// holds of its topic, then live events.
func testResume(t *testing.T, start StartNode, sequenced bool) {
	a, b := startNode(t, start, "a"), startNode(t, start, "b")
	linked(t, a, b)
	sa := a.join(t, nil, nil)
	sa.call(t, "rpc.subscribe", map[string]any{"topic": "rs.x"}, nil)
	var left event
	for i := range 5 {
		if _, err := a.h.Publish(ctxFor(t), "rs.x", i); err != nil {
			t.Fatal(err)
		}
		if e := sa.nextEvent(t); i == 2 {
			left = e // the subscriber goes away after this one
		}
	}

	sb := b.join(t, nil, nil)
	var res struct {
		Recovered bool
		Epoch     string
	}
	since := map[string]any{"epoch": left.Epoch, "seq": left.Seq}
	sb.call(t, "rpc.subscribe", map[string]any{"topic": "rs.x", "since": since}, &res)
	want := []string{"3", "4"}
	if !sequenced {
		want = []string{"0", "1", "2", "3", "4"}
		if res.Recovered || res.Epoch == left.Epoch {
			t.Fatalf("resumed on another node without a Sequencer: %+v, want recovered false and an epoch other than %q", res, left.Epoch)
		}
	} else if !res.Recovered || res.Epoch != left.Epoch {
		t.Fatalf("resumed on another node with a Sequencer: %+v, want recovered true in epoch %q", res, left.Epoch)
	}
	for _, w := range want {
		if e := sb.nextEvent(t); string(e.Data) != w {
			t.Fatalf("resumed with %s, want %s", e.Data, w)
		}
	}

	if _, err := a.h.Publish(ctxFor(t), "rs.x", 5); err != nil {
		t.Fatal(err)
	}
	ea, eb := sa.nextEvent(t), sb.nextEvent(t)
	if string(ea.Data) != "5" || string(eb.Data) != "5" {
		t.Fatalf("live events %s on a, %s on b, want 5", ea.Data, eb.Data)
	}
	if sequenced && (ea.Seq != eb.Seq || ea.Epoch != eb.Epoch) {
		t.Fatalf("a live event at %d of %q on a, %d of %q on b", ea.Seq, ea.Epoch, eb.Seq, eb.Epoch)
	}
}
