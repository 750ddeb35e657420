package client

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/internal/hubtest"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
)

// Dial tries the URLs in turn until one answers, and fails with every
// URL's error when none does.
func TestDialURLs(t *testing.T) {
	h := hubtest.Start(t, nil)
	dead := hubtest.DeadURL(t)
	c := dial(t, dead, &Options{URLs: []string{h.WS()}})
	if c.URL() != h.WS() {
		t.Fatalf("URL() = %s, want %s", c.URL(), h.WS())
	}
	var got []int
	if err := c.Call(ctx(t), "echo", []int{7}, &got); err != nil || len(got) != 1 || got[0] != 7 {
		t.Fatalf("echo: %v, %v", got, err)
	}

	dead2 := hubtest.DeadURL(t)
	_, err := Dial(ctx(t), dead, &Options{URLs: []string{dead2, dead}})
	if err == nil {
		t.Fatal("Dial with no hub up succeeded")
	}
	if msg := err.Error(); !strings.Contains(msg, dead) || !strings.Contains(msg, dead2) || strings.Count(msg, dead) != 1 {
		t.Fatalf("Dial error %q: want each URL once", msg)
	}
}

// After a connection loss, the client moves to the next URL, then the
// next, and round again: a hub that just went away is the last one tried.
func TestFailoverOrder(t *testing.T) {
	h := hubtest.Start(t, nil)
	px := []*proxy{newProxy(t, h.Addr()), newProxy(t, h.Addr()), newProxy(t, h.Addr())}
	states := newStateLog()
	c := dial(t, px[0].URL(), &Options{
		URLs:       []string{px[1].URL(), px[2].URL()},
		MinBackoff: 5 * time.Millisecond,
		MaxBackoff: 20 * time.Millisecond,
		OnState:    states.on,
	})
	states.until(t, StateConnected)

	px[0].Down()
	states.until(t, StateDisconnected)
	states.until(t, StateConnected)
	if c.URL() != px[1].URL() {
		t.Fatalf("after the first node went down: on %s, want %s", c.URL(), px[1].URL())
	}

	// The second goes down too, and the third is unreachable: the client
	// goes round to the first, up again.
	px[2].Down()
	px[0].Up()
	px[1].Down()
	states.until(t, StateDisconnected)
	states.until(t, StateConnected)
	if c.URL() != px[0].URL() {
		t.Fatalf("after the second node went down: on %s, want %s", c.URL(), px[0].URL())
	}
	if err := c.Call(ctx(t), "rpc.ping", nil, nil); err != nil {
		t.Fatal(err)
	}
}

// Two nodes that share one event stream (here: two listeners of one
// hub): the subscriber's node goes away in the middle of a stream of
// events, and the client resumes on the other without losing or
// repeating any.
func TestFailoverSharedStream(t *testing.T) {
	const n = 5000
	h := hubtest.Start(t, &hubtest.Options{History: hub.History{Retention: hub.Retention{Events: 2 * n}}})
	a, b := newProxy(t, h.Addr()), newProxy(t, h.Addr())
	rec := newRecorder(2 * n)
	sub := dial(t, a.URL(), &Options{
		URLs:        []string{b.URL()},
		MinBackoff:  10 * time.Millisecond,
		MaxBackoff:  50 * time.Millisecond,
		EventBuffer: 2 * n,
	})
	s, err := sub.Subscribe(ctx(t), "k", rec.handle)
	if err != nil {
		t.Fatal(err)
	}
	start := s.Position()
	published, wait := publisher(t, h.WS(), []string{"k"}, n)
	testkit.WaitCount(t, "1000 events", 1000, rec.n)
	a.Down()
	testkit.WaitCount(t, "half the events published", n/2, published)
	wait()

	wantRun(t, sub, rec, n, start)
	if sub.URL() != b.URL() {
		t.Fatalf("on %s, want %s", sub.URL(), b.URL())
	}
}

// Two nodes with streams of their own (another epoch): the subscriber
// resumes on the other node and is told that it missed events, before
// that node's events. Its provisions move with it.
func TestFailoverOtherStream(t *testing.T) {
	a, b := hubtest.Start(t, nil), hubtest.Start(t, nil)
	opts := &Options{URLs: []string{b.WS()}, MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond}
	states := newStateLog()
	opts.OnState = states.on
	sub := dial(t, a.WS(), opts)
	events := make(chan Event, 10)
	s, err := sub.Subscribe(ctx(t), "room.*", func(ev Event) { events <- ev })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sub.Provide(ctx(t), "svc.hello", peer.Func(func(_ context.Context, p struct{ Name string }) (string, error) {
		return "hello " + p.Name, nil
	})); err != nil {
		t.Fatal(err)
	}
	a.Publish("room.1", "on a")
	if ev := testkit.Recv(t, events, "event on a"); string(ev.Data) != `"on a"` {
		t.Fatalf("got %+v", ev)
	}
	onA := s.Position()

	a.Stop()
	states.until(t, StateDisconnected)
	states.until(t, StateConnected)
	if sub.URL() != b.WS() {
		t.Fatalf("on %s, want %s", sub.URL(), b.WS())
	}
	if n := b.Publish("room.2", "on b"); n != 1 {
		t.Fatalf("delivered to %d on b", n)
	}
	if ev := testkit.Recv(t, events, "missed"); !ev.Missed || ev.Epoch == onA.Epoch {
		t.Fatalf("got %+v, want Missed with b's epoch", ev)
	}
	if ev := testkit.Recv(t, events, "event on b"); string(ev.Data) != `"on b"` || ev.Epoch == onA.Epoch {
		t.Fatalf("got %+v", ev)
	}
	if got := s.Position(); got.Epoch == onA.Epoch {
		t.Fatalf("Position %v still of a's stream", got)
	}

	caller := dial(t, b.WS(), nil)
	var got string
	if err := caller.Call(ctx(t), "svc.hello", map[string]string{"name": "b"}, &got); err != nil || got != "hello b" {
		t.Fatalf("provided method after the move: %q, %v", got, err)
	}
}

// A client that cannot reach any of its URLs gives up after MaxAttempts
// attempts in all, not per URL.
func TestFailoverGiveUp(t *testing.T) {
	a, b := hubtest.Start(t, nil), hubtest.Start(t, nil)
	c := dial(t, a.WS(), &Options{URLs: []string{b.WS()}, MaxAttempts: 3, MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond})
	b.Stop()
	a.Stop()
	testkit.Recv(t, c.Done(), "client to give up")
	if err := c.Err(); !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "gave up after 3 attempts") {
		t.Fatalf("Err() = %v", err)
	}
}

// A hub at its connection limit refuses with 503 and "Retry-After: 1":
// the reconnecting client does not dial it again sooner, however short
// its backoff, and connects once it has room.
func TestReconnectHonoursRetryAfter(t *testing.T) {
	g := hubtest.NewGate(t)
	states := newStateLog()
	dial(t, g.URL, &Options{MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond, PingInterval: -1, OnState: states.on})
	g.Refuse(2)
	g.Drop()
	states.until(t, StateDisconnected)
	states.until(t, StateConnected)
	// The first dial was taken, the second and third refused.
	gaps := g.Gaps()
	if len(gaps) != 3 || gaps[1] < time.Second || gaps[2] < time.Second {
		t.Fatalf("dials came after %v: want 4, each after a refusal a second or more after it", gaps)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"":                              0,
		"1":                             time.Second,
		"120":                           2 * time.Minute,
		"-3":                            0,
		"soon":                          0,
		"Fri, 27 Nov 2026 12:00:30 GMT": 30 * time.Second,
		"Fri, 27 Nov 2026 11:00:00 GMT": 0, // past
	} {
		if got := retryAfter(v, now); got != want {
			t.Errorf("retryAfter(%q) = %v, want %v", v, got, want)
		}
	}
}
