package hub_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

// connectN is connect with room for n events.
func connectN(t *testing.T, h *hub.Hub, n int) *client {
	t.Helper()
	events := make(chan event, n)
	c := connect(t, h, nil, eventRouter(events))
	c.events = events
	return c
}

type subscribeResult struct {
	Topics    []string
	Epoch     string
	Seq       uint64
	Recovered *bool
}

func subscribeSince(t *testing.T, c *client, pattern string, since hub.Position) subscribeResult {
	t.Helper()
	var res subscribeResult
	params := map[string]any{"topic": pattern, "since": since}
	if err := c.Call(ctx(t), "rpc.subscribe", params, &res); err != nil {
		t.Fatalf("subscribe %s since %v: %v", pattern, since, err)
	}
	if res.Recovered == nil {
		t.Fatalf("subscribe with since: no recovered in %+v", res)
	}
	return res
}

// collect reads events until one with data `"end"`, which it leaves out.
func (c *client) collect(t *testing.T) []event {
	t.Helper()
	var got []event
	for {
		e := c.next(t)
		if string(e.Data) == `"end"` {
			return got
		}
		got = append(got, e)
	}
}

func eventSeqs(events []event) []uint64 {
	out := make([]uint64, len(events))
	for i, e := range events {
		out[i] = e.Seq
	}
	return out
}

func TestPositions(t *testing.T) {
	h := hub.New(&hub.Options{Policy: hub.AllowAll})
	a := connect(t, h, nil, nil)
	epoch := h.Position().Epoch
	res := subscribe2(t, a, []string{"p.*"})
	if res.Epoch != epoch || res.Seq != 0 {
		t.Fatalf("subscribe result %+v, want epoch %s seq 0", res, epoch)
	}
	for i := 1; i <= 3; i++ {
		var pub struct {
			Delivered int
			Seq       uint64
			Epoch     string
		}
		if err := a.Call(ctx(t), "rpc.publish", []any{"p.x", i}, &pub); err != nil {
			t.Fatal(err)
		}
		if pub.Delivered != 1 || pub.Seq != uint64(i) || pub.Epoch != epoch {
			t.Fatalf("publish %d: %+v", i, pub)
		}
		if e := a.next(t); e.Seq != uint64(i) || e.Epoch != epoch || e.Replay != "" {
			t.Fatalf("event %+v", e)
		}
	}
	// Positions are hub-wide: an event nobody receives takes one too.
	if _, err := h.Publish(ctx(t), "q", 0); err != nil {
		t.Fatal(err)
	}
	if res := subscribe2(t, a, []string{"q"}); res.Seq != 4 {
		t.Fatalf("subscribe result %+v, want seq 4", res)
	}
	if pos := h.Position(); pos.Seq != 4 || pos.Epoch != epoch {
		t.Fatalf("Position = %+v", pos)
	}
}

func subscribe2(t *testing.T, c *client, params any) subscribeResult {
	t.Helper()
	var res subscribeResult
	if err := c.Call(ctx(t), "rpc.subscribe", params, &res); err != nil {
		t.Fatalf("subscribe %v: %v", params, err)
	}
	return res
}

func TestRecover(t *testing.T) {
	h := hub.New(&hub.Options{Policy: hub.AllowAll})
	for i := range 10 {
		if _, err := h.Publish(ctx(t), fmt.Sprint("r.", i%2), i); err != nil {
			t.Fatal(err)
		}
	}
	epoch := h.Position().Epoch
	a := connect(t, h, nil, nil)

	// From position 4: 5 to 10 of r.*, in order, tagged, then live.
	res := subscribeSince(t, a, "r.*", hub.Position{Epoch: epoch, Seq: 4})
	if !*res.Recovered || res.Seq != 10 {
		t.Fatalf("result %+v", res)
	}
	if _, err := h.Publish(ctx(t), "r.0", "live"); err != nil {
		t.Fatal(err)
	}
	for want := uint64(5); want <= 11; want++ {
		e := a.next(t)
		replayed := want <= 10
		if e.Seq != want || (e.Replay == "r.*") != replayed || e.Epoch != epoch {
			t.Fatalf("event %+v, want seq %d (replayed %v)", e, want, replayed)
		}
	}
	a.noEvent(t)

	// One topic, from its start.
	b := connect(t, h, nil, nil)
	subscribeSince(t, b, "r.1", hub.Position{Epoch: epoch, Seq: 0})
	for _, want := range []uint64{2, 4, 6, 8, 10} {
		if e := b.next(t); e.Seq != want || e.Topic != "r.1" || e.Replay != "r.1" {
			t.Fatalf("event %+v, want %d", e, want)
		}
	}
	b.noEvent(t)

	// Nothing missed: nothing replayed.
	c := connect(t, h, nil, nil)
	if res := subscribeSince(t, c, "r.*", hub.Position{Epoch: epoch, Seq: 11}); !*res.Recovered {
		t.Fatalf("result %+v", res)
	}
	c.noEvent(t)

	// Another epoch: recovered false, and what is held is replayed.
	d := connect(t, h, nil, nil)
	if res := subscribeSince(t, d, "r.0", hub.Position{Epoch: "other", Seq: 7}); *res.Recovered {
		t.Fatalf("result %+v", res)
	}
	for _, want := range []uint64{1, 3, 5, 7, 9, 11} {
		if e := d.next(t); e.Seq != want {
			t.Fatalf("event %+v, want %d", e, want)
		}
	}
	// A position this epoch never gave is another stream's.
	e := connect(t, h, nil, nil)
	if res := subscribeSince(t, e, "r.1", hub.Position{Epoch: epoch, Seq: 99}); *res.Recovered {
		t.Fatalf("result %+v", res)
	}
	for _, want := range []uint64{2, 4, 6, 8, 10} {
		if ev := e.next(t); ev.Seq != want {
			t.Fatalf("event %+v, want %d", ev, want)
		}
	}
	if st := h.Stats().Stream; st.Recovered != 3 || st.Unrecovered != 2 || st.Replayed != 6+5+6+5 {
		t.Fatalf("Stats = %+v", st)
	}
}

func TestRecoverIncomplete(t *testing.T) {
	h := hub.New(&hub.Options{Policy: hub.AllowAll, History: hub.History{Retention: hub.Retention{Events: 5}}})
	for i := range 20 {
		if _, err := h.Publish(ctx(t), "w", i); err != nil {
			t.Fatal(err)
		}
	}
	a := connect(t, h, nil, nil)
	res := subscribeSince(t, a, "w", hub.Position{Epoch: h.Position().Epoch, Seq: 10})
	if *res.Recovered {
		t.Fatalf("result %+v: events 11 to 15 are gone", res)
	}
	var got []uint64
	for range 5 {
		got = append(got, a.next(t).Seq)
	}
	if !slices.Equal(got, []uint64{16, 17, 18, 19, 20}) {
		t.Fatalf("got %v, want what is held", got)
	}
	a.noEvent(t)
}

// TestRecoverWildcard recovers a subscription whose pattern spans several
// topics with their events interleaved, one topic keeping no history.
func TestRecoverWildcard(t *testing.T) {
	h := hub.New(&hub.Options{Policy: hub.AllowAll, History: hub.History{
		Topics: []hub.TopicRetention{{Pattern: "m.off", Retention: hub.Retention{Off: true}}},
	}})
	topics := []string{"m.a", "m.b.c", "n.a", "m.d"}
	for i := range 40 {
		if _, err := h.Publish(ctx(t), topics[i%len(topics)], i); err != nil {
			t.Fatal(err)
		}
	}
	epoch := h.Position().Epoch
	a := connectN(t, h, 100)
	res := subscribeSince(t, a, "m.>", hub.Position{Epoch: epoch, Seq: 20})
	if !*res.Recovered {
		t.Fatalf("result %+v", res)
	}
	if _, err := h.Publish(ctx(t), "m.end", "end"); err != nil {
		t.Fatal(err)
	}
	var want []uint64
	for s := uint64(21); s <= 40; s++ {
		if topics[(s-1)%4] != "n.a" {
			want = append(want, s)
		}
	}
	got := a.collect(t)
	if !slices.Equal(eventSeqs(got), want) {
		t.Fatalf("got %v, want %v", eventSeqs(got), want)
	}
	for _, e := range got {
		if e.Topic != topics[(e.Seq-1)%4] || e.Replay != "m.>" {
			t.Fatalf("event %+v", e)
		}
	}
	// An event on a topic without history since: not complete.
	if _, err := h.Publish(ctx(t), "m.off", 1); err != nil {
		t.Fatal(err)
	}
	b := connect(t, h, nil, nil)
	if res := subscribeSince(t, b, "m.*", hub.Position{Epoch: epoch, Seq: 41}); *res.Recovered {
		t.Fatal("recovered over an event that was never kept")
	}
	c := connect(t, h, nil, nil)
	if res := subscribeSince(t, c, "n.*", hub.Position{Epoch: epoch, Seq: 41}); !*res.Recovered {
		t.Fatal("n.* cannot match m.off, yet not recovered")
	}
}

// TestRecoverWhilePublishing subscribes with since while a publisher
// keeps publishing, many times: each subscriber must get every event of
// its pattern after its position exactly once, in order, across the seam
// between replay and live delivery.
func TestRecoverWhilePublishing(t *testing.T) {
	h := hub.New(&hub.Options{Policy: hub.AllowAll, History: hub.History{Retention: hub.Retention{Events: 100_000}}})
	epoch := h.Position().Epoch
	// The publisher goes at a pace the subscribers can follow (at most
	// 2000 events a second), as a subscriber that cannot is closed:
	// this tests the seam, not who is faster.
	stop, started := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	var published atomic.Int64
	wg.Go(func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			for k := range 10 {
				if _, err := h.Publish(context.Background(), fmt.Sprintf("s.%d.%d", k%2, i%3), i); err != nil {
					t.Error(err)
					return
				}
			}
			if published.Add(10) == 1000 {
				close(started)
			}
		}
	})
	stopPublisher := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer stopPublisher()
	testkit.Recv(t, started, "the publisher to start")
	type sub struct {
		c       *client
		pattern string
		since   uint64
	}
	var subs []sub
	for i := range 20 {
		pattern := []string{"s.>", "s.1.*", "s.*.2", "s.0.0"}[i%4]
		c := connectN(t, h, 200_000)
		since := h.Position().Seq - uint64(100*(i%5))
		if res := subscribeSince(t, c, pattern, hub.Position{Epoch: epoch, Seq: since}); !*res.Recovered {
			t.Fatalf("not recovered: %+v", res)
		}
		subs = append(subs, sub{c, pattern, since})
	}
	stopPublisher()
	wants := make([][]uint64, len(subs))
	for i, s := range subs {
		page, err := h.Store().Read(hub.Query{Pattern: s.pattern, After: s.since, Limit: 1 << 30})
		if err != nil || !page.Complete {
			t.Fatalf("store: %v, complete %v", err, page.Complete)
		}
		for _, e := range page.Events {
			wants[i] = append(wants[i], e.Seq)
		}
	}
	// An end marker on a topic of each pattern.
	for _, topic := range []string{"s.end.x", "s.1.end", "s.end.2", "s.0.0"} {
		if _, err := h.Publish(ctx(t), topic, "end"); err != nil {
			t.Fatal(err)
		}
	}
	if st := h.Stats(); st.SlowClosed != 0 || st.Stream.Lost != 0 {
		t.Fatalf("Stats = %+v", st)
	}
	for i, s := range subs {
		got := eventSeqs(s.c.collect(t))
		if !slices.Equal(got, wants[i]) {
			t.Fatalf("subscriber %d (%s after %d): %d events, want %d; first difference at %d",
				i, s.pattern, s.since, len(got), len(wants[i]), firstDiff(got, wants[i]))
		}
	}
}

func firstDiff(a, b []uint64) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestRecoverOverlapping: a peer with a live subscription resumes another
// whose pattern overlaps it. Replayed events are tagged with the pattern
// they are for, and live events wait until the replay is out.
func TestRecoverOverlapping(t *testing.T) {
	h := hub.New(&hub.Options{Policy: hub.AllowAll})
	a := connectN(t, h, 100)
	subscribe(t, a, []string{"o.a"})
	for i := range 4 {
		if _, err := h.Publish(ctx(t), []string{"o.a", "o.b"}[i%2], i); err != nil {
			t.Fatal(err)
		}
	}
	if got := []uint64{a.next(t).Seq, a.next(t).Seq}; !slices.Equal(got, []uint64{1, 3}) {
		t.Fatalf("live o.a: %v", got)
	}
	subscribeSince(t, a, "o.*", hub.Position{Epoch: h.Position().Epoch, Seq: 0})
	if _, err := h.Publish(ctx(t), "o.a", "end"); err != nil {
		t.Fatal(err)
	}
	got := a.collect(t)
	var tags []string
	for _, e := range got {
		tags = append(tags, fmt.Sprint(e.Seq, e.Replay))
	}
	if want := []string{"1o.*", "2o.*", "3o.*", "4o.*"}; !slices.Equal(tags, want) {
		t.Fatalf("got %v, want %v", tags, want)
	}
}

// TestHeldTooMany: a peer whose replay cannot keep up with what is
// published meanwhile is closed as too slow, and the others are not held
// up.
func TestHeldTooMany(t *testing.T) {
	h := hub.New(&hub.Options{Policy: hub.AllowAll})
	// The slow peer's reader stops at its first event, so its replay
	// soon waits for room in its queue.
	slow, events, gate := stuckPeer(t, h)
	defer close(gate)
	fast := connectN(t, h, 10_000)
	subscribe(t, fast, []string{"h"})
	replayAll(t, h, slow)
	<-events

	// In rounds the fast subscriber keeps up with (its queue is bounded
	// too), more than the slow one may have held for it.
	for round := range 10 {
		for i := range 500 {
			if _, err := h.Publish(ctx(t), "h", round*500+i); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 500 {
			if e := fast.next(t); string(e.Data) != fmt.Sprint(round*500+i) {
				t.Fatalf("fast subscriber: event %d is %s", round*500+i, e.Data)
			}
		}
	}
	if st := h.Stats(); st.SlowClosed != 1 {
		t.Fatalf("Stats = %+v, want the slow peer closed", st)
	}
	testkit.Recv(t, slow.p.Conn().Done(), "the slow peer to be closed")
}
