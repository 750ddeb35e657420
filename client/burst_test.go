package client

import (
	"encoding/json"
	"sync"
	"testing"

	"github.com/switchboard-rpc/switchboard/internal/hubtest"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

// TestEventBurst publishes from several publishers at once and checks
// that the subscriber gets every event, each publisher's in order.
func TestEventBurst(t *testing.T) {
	h := hubtest.Start(t, nil)
	c := dial(t, h.WS(), nil)
	pub := dial(t, h.WS(), nil)
	const n, workers = 8000, 8
	type seq struct{ W, I int }
	got := make(chan seq, n)
	if _, err := c.Subscribe(ctx(t), "burst", func(ev Event) {
		var s seq
		if err := json.Unmarshal(ev.Data, &s); err != nil {
			t.Error(err)
		}
		got <- s
	}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range n / workers {
				if _, err := pub.Publish(ctx(t), "burst", seq{w, i}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	next := make([]int, workers)
	for range n {
		s := testkit.Recv(t, got, "event")
		if s.I != next[s.W] {
			t.Fatalf("publisher %d: got event %d, want %d", s.W, s.I, next[s.W])
		}
		next[s.W]++
	}
	wg.Wait()
}
