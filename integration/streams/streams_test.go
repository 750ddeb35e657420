// Package streams_test checks the hub's event streams end to end, against
// a real hub process and the Go client: a subscriber whose connection is
// cut resumes where it was, or is told it missed events; wildcard
// subscriptions resume over several topics; presence follows peers as they
// come and go; history keeps its bounds; and nothing stays behind once
// the subscribers leave.
package streams_test

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/client"
	"github.com/switchboard-rpc/switchboard/integration/internal/hubproc"
	"github.com/switchboard-rpc/switchboard/integration/internal/netcut"
	"github.com/switchboard-rpc/switchboard/integration/internal/testclient"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

// got is an event as a handler saw it: its data as an int, or missed.
type got struct {
	topic  string
	n      int
	seq    uint64
	missed bool
}

// collect returns a handler that sends each event to the channel, which
// has room for size of them.
func collect(t *testing.T, size int) (func(client.Event), <-chan got) {
	ch := make(chan got, size)
	return func(ev client.Event) {
		g := got{topic: ev.Topic, seq: ev.Seq, missed: ev.Missed}
		if !ev.Missed {
			n, err := strconv.Atoi(string(ev.Data))
			if err != nil {
				t.Errorf("event data %s: %v", ev.Data, err)
			}
			g.n = n
		}
		select {
		case ch <- g:
		default:
			t.Errorf("more events than the %d expected", size)
		}
	}, ch
}

// rig is a demo hub with a subscriber behind a proxy the test can cut
// (connected), and a publisher straight to the hub.
type rig struct {
	p      *netcut.Proxy
	sub    *client.Client
	states <-chan client.State
	pub    *client.Client
}

func newRig(t *testing.T, hubArgs ...string) *rig {
	h := hubproc.StartDemo(t, hubArgs...)
	r := &rig{p: netcut.Start(t, h.Addr())}
	r.sub, r.states = testclient.Dial(t, testclient.URL(r.p.Addr()), nil)
	testclient.WaitState(t, r.states, client.StateConnected)
	r.pub, _ = testclient.Dial(t, h.WebSocketURL(), nil)
	return r
}

// publishAway publishes the events from to to while the subscriber is
// away: the proxy holds its connection until the client says it is
// connecting again, and lets it back once they are published.
func (r *rig) publishAway(t *testing.T, ctx context.Context, from, to int, topic func(int) string) {
	t.Helper()
	r.p.Block()
	testclient.WaitState(t, r.states, client.StateConnecting)
	if err := publish(ctx, r.pub, from, to, topic); err != nil {
		t.Fatal(err)
	}
	r.p.Unblock()
	testclient.WaitState(t, r.states, client.StateConnected)
}

// noMore fails the test if an event is waiting on ch.
func noMore(t *testing.T, ch <-chan got) {
	t.Helper()
	select {
	case g := <-ch:
		t.Errorf("an event beyond the last: %+v", g)
	default:
	}
}

// publish publishes the ints from..to on topic(i), one after the other.
func publish(ctx context.Context, c *client.Client, from, to int, topic func(int) string) error {
	for i := from; i <= to; i++ {
		if _, err := c.Publish(ctx, topic(i), i); err != nil {
			return err
		}
	}
	return nil
}

func fixed(topic string) func(int) string { return func(int) string { return topic } }

// A subscriber whose TCP connection is cut three times while 10,000
// events are published reconnects by itself and gets all of them, in
// order, each once, without being told it missed any.
func TestResumeAfterCuts(t *testing.T) {
	// The history holds every event, so that however slowly the client
	// comes back on a loaded machine, nothing can be dropped.
	h := hubproc.StartDemo(t, "-history", "10000")
	p := netcut.Start(t, h.Addr())
	sub, states := testclient.Dial(t, testclient.URL(p.Addr()), nil)
	pub, _ := testclient.Dial(t, h.WebSocketURL(), nil)
	const n = 10000
	handle, events := collect(t, n+10)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	if _, err := sub.Subscribe(ctx, "cut.topic", handle); err != nil {
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	pubErr := make(chan error, 1)
	wg.Go(func() { pubErr <- publish(ctx, pub, 1, n, fixed("cut.topic")) })

	var last uint64
	for want := 1; want <= n; want++ {
		g := testkit.RecvSlow(t, events, "an event")
		if g.missed {
			t.Fatalf("told events were missed before event %d", want)
		}
		if g.n != want || g.seq <= last {
			t.Fatalf("event %d (seq %d) after seq %d; want event %d", g.n, g.seq, last, want)
		}
		last = g.seq
		if want == 2000 || want == 5000 || want == 8000 {
			p.Cut()
		}
	}
	if err := <-pubErr; err != nil {
		t.Fatalf("publish: %v", err)
	}
	connected := 0
	for len(states) > 0 {
		if <-states == client.StateConnected {
			connected++
		}
	}
	if connected < 4 {
		t.Errorf("connected %d times; want the first and 3 reconnections", connected)
	}
	select {
	case g := <-events:
		t.Errorf("an event beyond the %d published: %+v", n, g)
	default:
	}
}

// A subscriber away longer than the history covers (-history 100) is told
// it missed events, then gets what the hub still holds and the live ones,
// in order, each once.
func TestResumeBeyondHistory(t *testing.T) {
	r := newRig(t, "-history", "100")
	sub, pub := r.sub, r.pub
	handle, events := collect(t, 1000)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if _, err := sub.Subscribe(ctx, "gap.topic", handle); err != nil {
		t.Fatal(err)
	}
	topic := fixed("gap.topic")
	if err := publish(ctx, pub, 1, 50, topic); err != nil {
		t.Fatal(err)
	}
	for want := 1; want <= 50; want++ {
		if g := testkit.RecvSlow(t, events, "an event"); g.missed || g.n != want {
			t.Fatalf("got %+v; want event %d", g, want)
		}
	}

	r.publishAway(t, ctx, 51, 550, topic)

	if g := testkit.RecvSlow(t, events, "an event"); !g.missed {
		t.Fatalf("first event after the gap %+v; want Missed", g)
	}
	// The hub held the newest 100 of the topic: 451 to 550. The live ones
	// are published once those are in: published during the replay, they
	// would push its oldest events out of the history before it sent them.
	var last uint64
	check := func(from, to int) {
		for want := from; want <= to; want++ {
			g := testkit.RecvSlow(t, events, "an event")
			if g.missed || g.n != want || g.seq <= last {
				t.Fatalf("got %+v after seq %d; want event %d", g, last, want)
			}
			last = g.seq
		}
	}
	check(451, 550)
	if err := publish(ctx, pub, 551, 600, topic); err != nil {
		t.Fatal(err)
	}
	check(551, 600)
	noMore(t, events)
}

// A wildcard subscription resumes over all its topics: the events of
// w.a, w.b.c and w.d published while it was away come back merged in
// publish order, and no event of another topic.
func TestWildcardResume(t *testing.T) {
	r := newRig(t)
	sub, pub := r.sub, r.pub
	handle, events := collect(t, 1000)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if _, err := sub.Subscribe(ctx, "w.>", handle); err != nil {
		t.Fatal(err)
	}
	topics := []string{"w.a", "w.b.c", "x.other", "w.d", "wx.a"}
	topic := func(i int) string { return topics[i%len(topics)] }
	var want []got
	for i := 1; i <= 500; i++ {
		if tp := topic(i); tp[:2] == "w." {
			want = append(want, got{topic: tp, n: i})
		}
	}

	if err := publish(ctx, pub, 1, 100, topic); err != nil {
		t.Fatal(err)
	}
	var gots []got
	for len(gots) < 60 { // 3 of every 5 of the first 100
		gots = append(gots, testkit.RecvSlow(t, events, "an event"))
	}
	r.publishAway(t, ctx, 101, 400, topic)
	if err := publish(ctx, pub, 401, 500, topic); err != nil {
		t.Fatal(err)
	}
	for len(gots) < len(want) {
		gots = append(gots, testkit.RecvSlow(t, events, "an event"))
	}
	var last uint64
	for i, g := range gots {
		if g.missed || g.topic != want[i].topic || g.n != want[i].n || g.seq <= last {
			t.Fatalf("event %d: got %+v after seq %d; want %+v", i, g, last, want[i])
		}
		last = g.seq
	}
	noMore(t, events)
}

// Presence follows peers: a watcher of room.1 is told who joins and
// leaves (by unsubscribing, closing, or losing its connection), once per
// peer whatever patterns it uses, and rpc.presence lists who is there.
func TestPresence(t *testing.T) {
	h := hubproc.StartDemo(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	w, _ := testclient.Dial(t, h.WebSocketURL(), nil)
	changes := make(chan client.PresenceChange, 100)
	if _, err := w.SubscribeWith(ctx, "room.1", &client.SubscribeOptions{
		OnPresence: func(pc client.PresenceChange) { changes <- pc },
	}, func(client.Event) {}); err != nil {
		t.Fatal(err)
	}
	present := func(want ...string) {
		t.Helper()
		peers, err := w.Presence(ctx, "room.1")
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, p := range peers {
			ids = append(ids, p.ID)
		}
		slices.Sort(ids)
		slices.Sort(want)
		if !slices.Equal(ids, want) {
			t.Fatalf("present %v; want %v", ids, want)
		}
	}
	change := func(join bool) string {
		t.Helper()
		select {
		case pc := <-changes:
			if pc.Join != join || pc.Topic != "room.1" || pc.Peer.ID == "" {
				t.Fatalf("presence change %+v; want join %v on room.1", pc, join)
			}
			return pc.Peer.ID
		case <-time.After(30 * time.Second):
			t.Fatalf("no presence change (join %v) within 30s", join)
			return ""
		}
	}
	peers, err := w.Presence(ctx, "room.1")
	if err != nil || len(peers) != 1 {
		t.Fatalf("presence with the watcher alone: %v, %v", peers, err)
	}
	wID := peers[0].ID

	// A, behind a proxy, never reconnects once cut.
	p := netcut.Start(t, h.Addr())
	a, _ := testclient.Dial(t, testclient.URL(p.Addr()), &client.Options{MaxAttempts: -1})
	if _, err := a.Subscribe(ctx, "room.1", func(client.Event) {}); err != nil {
		t.Fatal(err)
	}
	aID := change(true)
	present(wID, aID)

	// B joins once through two patterns, and leaves when neither is left.
	b, _ := testclient.Dial(t, h.WebSocketURL(), nil)
	star, err := b.Subscribe(ctx, "room.*", func(client.Event) {})
	if err != nil {
		t.Fatal(err)
	}
	bID := change(true)
	present(wID, aID, bID)
	all, err := b.Subscribe(ctx, "room.>", func(client.Event) {})
	if err != nil {
		t.Fatal(err)
	}
	if err := star.Unsubscribe(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Subscribe(ctx, "other.x", func(client.Event) {}); err != nil {
		t.Fatal(err)
	}
	present(wID, aID, bID)
	if err := all.Unsubscribe(ctx); err != nil {
		t.Fatal(err)
	}
	if id := change(false); id != bID {
		t.Fatalf("left: %s; want B %s", id, bID)
	}
	present(wID, aID)

	// B comes back and closes its client.
	if _, err := b.Subscribe(ctx, "room.1", func(client.Event) {}); err != nil {
		t.Fatal(err)
	}
	if id := change(true); id != bID {
		t.Fatalf("joined: %s; want B %s", id, bID)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if id := change(false); id != bID {
		t.Fatalf("left: %s; want B %s", id, bID)
	}

	// A's connection is cut: no close frame, the hub finds out by itself.
	p.Block()
	if id := change(false); id != aID {
		t.Fatalf("left: %s; want A %s", id, aID)
	}
	present(wID)
	select {
	case pc := <-changes:
		t.Errorf("an extra presence change: %+v", pc)
	default:
	}
}

// History keeps its bound (-history 50): rpc.history answers at most 50
// events of a topic, the newest, oldest first; a pattern merges its
// topics in publish order; a limit takes the newest. And once twenty
// subscribers have come, received and gone, the hub's goroutines and heap
// are back to where they were.
func TestHistoryBoundsAndBaseline(t *testing.T) {
	h := hubproc.StartDemo(t, "-history", "50")
	base := h.Baseline()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	pub, _ := testclient.Dial(t, h.WebSocketURL(), nil)
	if err := publish(ctx, pub, 1, 200, fixed("h.a")); err != nil {
		t.Fatal(err)
	}
	if err := publish(ctx, pub, 201, 230, fixed("h.b")); err != nil {
		t.Fatal(err)
	}
	check := func(pattern string, limit int, from, to int) {
		t.Helper()
		hist, err := pub.History(ctx, pattern, limit, client.Position{})
		if err != nil {
			t.Fatal(err)
		}
		var ns []int
		var last uint64
		for _, ev := range hist.Events {
			n, _ := strconv.Atoi(string(ev.Data))
			ns = append(ns, n)
			if ev.Seq <= last || ev.Epoch != hist.Epoch {
				t.Fatalf("history of %s: event %d at %s:%d after seq %d", pattern, n, ev.Epoch, ev.Seq, last)
			}
			last = ev.Seq
		}
		var want []int
		for i := from; i <= to; i++ {
			want = append(want, i)
		}
		if !slices.Equal(ns, want) {
			t.Fatalf("history of %s, limit %d: %v; want %d to %d", pattern, limit, ns, from, to)
		}
		if hist.Seq != 230 {
			t.Errorf("history's position %d; want 230", hist.Seq)
		}
	}
	check("h.a", 1000, 151, 200)
	check("h.b", 1000, 201, 230)
	check("h.>", 1000, 151, 230)
	check("h.>", 10, 221, 230)
	check("h.a", 5, 196, 200)

	const subscribers, events = 20, 200
	var chans []<-chan got
	var clients []*client.Client
	for range subscribers {
		c, _ := testclient.Dial(t, h.WebSocketURL(), nil)
		handle, ch := collect(t, events)
		if _, err := c.Subscribe(ctx, "h.>", handle); err != nil {
			t.Fatal(err)
		}
		chans = append(chans, ch)
		clients = append(clients, c)
	}
	if err := publish(ctx, pub, 1001, 1000+events, fixed("h.c")); err != nil {
		t.Fatal(err)
	}
	for i, ch := range chans {
		for want := 1001; want <= 1000+events; want++ {
			if g := testkit.RecvSlow(t, ch, "an event"); g.n != want {
				t.Fatalf("subscriber %d: got %+v; want event %d", i, g, want)
			}
		}
	}
	for _, c := range clients {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Close(); err != nil {
		t.Fatal(err)
	}
	h.WaitRecovered(base, nil)
}
