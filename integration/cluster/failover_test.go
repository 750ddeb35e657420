package cluster_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/client"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
)

// TestClientFailover: a Go client given the three nodes' URLs subscribes
// on n1 while a publisher on n2 publishes; n1 is killed with SIGKILL. The
// client moves to the next node by itself and resumes from the last event
// it took: with JetStream, its handler sees every event once, in order,
// and no word of anything missed. Its provided method moves with it.
func TestClientFailover(t *testing.T) {
	ns := startNATS(t)
	hubs := startNodes(t, ns, 3, "-nats-jetstream")
	const total = 600
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()

	connected := make(chan string, 10)
	urls := []string{hubs[0].WebSocketURL(), hubs[1].WebSocketURL(), hubs[2].WebSocketURL()}
	c, err := client.Dial(ctx, urls[0], &client.Options{
		URLs:       urls[1:],
		MinBackoff: 10 * time.Millisecond,
		MaxBackoff: 100 * time.Millisecond,
		OnState: func(s client.State, _ error) {
			if s == client.StateConnected {
				connected <- "up"
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, ch := subscribe(t, c, "f.x", client.Position{}, 2*total)
	if _, err := c.Provide(ctx, "mobile.ping", peer.Func(func(context.Context, struct{}) (string, error) { return "pong", nil })); err != nil {
		t.Fatal(err)
	}

	pub := dial(t, hubs[1])
	var wg sync.WaitGroup
	wg.Go(func() {
		for n := 1; n <= total; n++ {
			if _, err := pub.Publish(ctx, "f.x", n); err != nil {
				t.Errorf("publish %d: %v", n, err)
				return
			}
		}
	})
	for n := 1; n <= total/4; n++ {
		if r := testkit.RecvSlow(t, ch, "an event"); r.missed || r.data != strconv.Itoa(n) {
			t.Fatalf("event %+v, want %d", r, n)
		}
	}
	hubs[0].Kill()
	for n := total/4 + 1; n <= total; n++ {
		if r := testkit.RecvSlow(t, ch, "an event"); r.missed || r.data != strconv.Itoa(n) {
			t.Fatalf("event %+v, want %d: none lost or twice across the move", r, n)
		}
	}
	wg.Wait()
	if c.URL() != urls[1] {
		t.Fatalf("on %s after n1 was killed, want the next URL, %s", c.URL(), urls[1])
	}
	select {
	case r := <-ch:
		t.Fatalf("more than the events published: %+v", r)
	default:
	}

	// Its provided method is served from n2 now: a caller on n3 reaches
	// it, even before n3 has taken n1 for gone.
	var got string
	caller := dial(t, hubs[2])
	if err := callWhenProvided(t, caller, "mobile.ping", nil, &got); err != nil || got != "pong" {
		t.Fatalf("mobile.ping after the move: %q, %v", got, err)
	}
}
