package client

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/internal/hubtest"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/server"
)

// proxy forwards TCP connections to a hub, and can cut them: Down kills
// every connection at once, as a network failure would (no close frame),
// and refuses new ones until Up.
type proxy struct {
	t      *testing.T
	ln     net.Listener
	target string
	wg     sync.WaitGroup

	mu    sync.Mutex
	down  bool
	conns map[net.Conn]struct{}
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{t: t, ln: ln, target: target, conns: make(map[net.Conn]struct{})}
	p.wg.Go(p.accept)
	t.Cleanup(func() {
		ln.Close()
		p.Down()
		p.wg.Wait()
	})
	return p
}

// URL returns the WebSocket URL of the hub through the proxy.
func (p *proxy) URL() string { return "ws://" + p.ln.Addr().String() + "/rpc" }

func (p *proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.down {
			p.mu.Unlock()
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns[c], p.conns[up] = struct{}{}, struct{}{}
		p.mu.Unlock()
		p.wg.Go(func() { p.pipe(c, up) })
		p.wg.Go(func() { p.pipe(up, c) })
	}
}

func (p *proxy) pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	dst.Close()
	src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

// Down cuts every connection and refuses new ones.
func (p *proxy) Down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // a reset, not a goodbye
		}
		c.Close()
	}
}

// Up accepts connections again.
func (p *proxy) Up() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}

// recorder collects a subscription's events on a channel.
type recorder struct {
	ch    chan Event
	count int
	on    map[int]chan struct{} // closed when count reaches the key
	mu    sync.Mutex
}

func newRecorder(n int) *recorder {
	return &recorder{ch: make(chan Event, n), on: make(map[int]chan struct{})}
}

// n returns how many events the recorder has.
func (r *recorder) n() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.count
}

func (r *recorder) handle(ev Event) {
	r.ch <- ev
	r.mu.Lock()
	r.count++
	if ch, ok := r.on[r.count]; ok {
		close(ch)
	}
	r.mu.Unlock()
}

// at returns a channel closed when the recorder has n events.
func (r *recorder) at(n int) <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	ch := make(chan struct{})
	if r.count >= n {
		close(ch)
	} else {
		r.on[n] = ch
	}
	return ch
}

// publisher publishes n events on the topics in turn, data i, from a
// client of its own, while the test goes on. It returns how many it has
// published so far, and a wait for it to end (the test's end waits too).
func publisher(t *testing.T, url string, topics []string, n int) (published func() int, wait func()) {
	t.Helper()
	pub := dial(t, url, nil)
	var count atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range n {
			if err := publishOne(t, pub, topics[i%len(topics)], i); err != nil {
				t.Errorf("publish %d: %v", i, err)
				return
			}
			count.Add(1)
		}
	})
	t.Cleanup(wg.Wait)
	return func() int { return int(count.Load()) }, wg.Wait
}

// publish publishes events from to to-1 on the topics in turn, data i.
func publish(t *testing.T, c *Client, topics []string, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if err := publishOne(t, c, topics[i%len(topics)], i); err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
	}
}

// publishOne publishes data on topic within a deadline of its own: a run
// of thousands may take longer in all on a loaded machine.
func publishOne(t *testing.T, c *Client, topic string, data any) error {
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	_, err := c.Publish(ctx, topic, data)
	return err
}

// TestResumeAfterKill kills a subscriber's connection while a publisher
// sends 10 000 events, keeps it away while thousands more go out, and
// lets it back while the publisher goes on: it must end with all 10 000,
// in order, none twice, and no word of anything missed.
func TestResumeAfterKill(t *testing.T) {
	const n = 10_000
	h := hubtest.Start(t, &hubtest.Options{History: hub.History{Retention: hub.Retention{Events: 2 * n}}})
	px := newProxy(t, h.Addr())
	rec := newRecorder(2 * n)
	sub := dial(t, px.URL(), &Options{MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, EventBuffer: 2 * n})
	s, err := sub.Subscribe(ctx(t), "k", rec.handle)
	if err != nil {
		t.Fatal(err)
	}
	start := s.Position()

	published, wait := publisher(t, h.WS(), []string{"k"}, n)
	testkit.WaitCount(t, "2000 events", 2000, rec.n)
	px.Down()
	testkit.WaitCount(t, "6000 events published", 6000, published)
	t.Logf("connection killed after 2000 events received; back after %d published", published())
	px.Up()
	wait()

	wantRun(t, sub, rec, n, start)
	if got := s.Position(); got.Seq != start.Seq+n {
		t.Fatalf("Position %v after the last event", got)
	}
	if st := h.Hub().Stats().Stream; st.Recovered == 0 || st.Unrecovered != 0 {
		t.Fatalf("Stats = %+v", st)
	}
}

// wantRun checks that events 0 to n-1 arrive in order, each with the
// position after start's, none missed, and nothing after them.
func wantRun(t *testing.T, c *Client, rec *recorder, n int, start Position) {
	t.Helper()
	for i := range n {
		ev := testkit.Recv(t, rec.ch, fmt.Sprint("event ", i))
		if ev.Missed || string(ev.Data) != fmt.Sprint(i) || ev.Seq != start.Seq+uint64(i)+1 || ev.Epoch != start.Epoch {
			t.Fatalf("event %d: %+v", i, ev)
		}
	}
	noMore(t, c, rec)
}

// noMore checks that nothing else arrives: a round trip through the hub
// after a last publish on a topic nobody else has.
func noMore(t *testing.T, c *Client, rec *recorder) {
	t.Helper()
	if err := c.Call(ctx(t), "rpc.ping", nil, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-rec.ch:
		t.Fatalf("unexpected %+v", ev)
	case <-time.After(50 * time.Millisecond): // events queued before the ping are out by now
	}
}

// TestResumeWindowTooSmall: the hub keeps the last 1000 events, and 9500
// go out while the subscriber is away. It is told it missed some, gets
// what is held, in order, none twice, then the live ones.
func TestResumeWindowTooSmall(t *testing.T) {
	const n = 10_000
	h := hubtest.Start(t, &hubtest.Options{History: hub.History{Retention: hub.Retention{Events: 1000}}})
	px := newProxy(t, h.Addr())
	rec := newRecorder(2 * n)
	sub := dial(t, px.URL(), &Options{MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, EventBuffer: 2 * n})
	if _, err := sub.Subscribe(ctx(t), "k", rec.handle); err != nil {
		t.Fatal(err)
	}
	pub := dial(t, h.WS(), nil)
	publish(t, pub, []string{"k"}, 0, 500)
	testkit.Recv(t, rec.at(500), "500 events")
	px.Down()
	publish(t, pub, []string{"k"}, 500, n)
	px.Up()
	var prev Event
	missed := 0
	got := 0
	for {
		ev := testkit.Recv(t, rec.ch, "event")
		if ev.Missed {
			missed++
			continue
		}
		if prev.Seq != 0 && ev.Seq <= prev.Seq {
			t.Fatalf("event %s after %s: out of order or twice", ev.Data, prev.Data)
		}
		prev = ev
		got++
		if string(ev.Data) == fmt.Sprint(n-1) {
			break
		}
	}
	if missed != 1 || got < 1500 || got >= n {
		t.Fatalf("%d events and %d Missed; want the 500 before, 1000 held, and one Missed", got, missed)
	}
	// Then live ones.
	h.Publish("k", "live")
	if ev := testkit.Recv(t, rec.ch, "live event"); string(ev.Data) != `"live"` || ev.Seq <= prev.Seq {
		t.Fatalf("got %+v after %+v", ev, prev)
	}
	if st := h.Hub().Stats().Stream; st.Unrecovered != 1 {
		t.Fatalf("Stats = %+v", st)
	}
}

// TestResumeWildcard resumes a subscription to a pattern over several
// topics, and one to a pattern inside it on the same connection: each
// gets its own events, in order, once.
func TestResumeWildcard(t *testing.T) {
	h := hubtest.Start(t, nil)
	px := newProxy(t, h.Addr())
	sub := dial(t, px.URL(), &Options{MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
	all, one := newRecorder(1000), newRecorder(1000)
	if _, err := sub.Subscribe(ctx(t), "w.>", all.handle); err != nil {
		t.Fatal(err)
	}
	if _, err := sub.Subscribe(ctx(t), "w.a", one.handle); err != nil {
		t.Fatal(err)
	}
	topics := []string{"w.a", "w.b.c", "x", "w.d"}
	pubc := dial(t, h.WS(), nil)
	publish := func(from, to int) {
		for i := from; i < to; i++ {
			if _, err := pubc.Publish(ctx(t), topics[i%4], i); err != nil {
				t.Fatal(err)
			}
		}
	}
	publish(0, 40)
	testkit.Recv(t, all.at(30), "30 events")
	px.Down()
	publish(40, 200)
	px.Up()
	publish(200, 240)

	check := func(r *recorder, want func(i int) bool, name string) {
		t.Helper()
		for i := range 240 {
			if !want(i) {
				continue
			}
			ev := testkit.Recv(t, r.ch, name)
			if ev.Missed || string(ev.Data) != fmt.Sprint(i) || ev.Topic != topics[i%4] {
				t.Fatalf("%s: event for %d is %+v", name, i, ev)
			}
		}
	}
	check(all, func(i int) bool { return i%4 != 2 }, "w.>")
	check(one, func(i int) bool { return i%4 == 0 }, "w.a")
	noMore(t, sub, all)
	noMore(t, sub, one)
}

// TestSubscribeSince starts a subscription in a new client from a
// position saved from an earlier one.
func TestSubscribeSince(t *testing.T) {
	h := hubtest.Start(t, nil)
	first := dial(t, h.WS(), nil)
	rec := newRecorder(100)
	if _, err := first.Subscribe(ctx(t), "n.*", rec.handle); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		h.Publish(fmt.Sprint("n.", i), i)
	}
	var since Position
	for range 3 {
		since = testkit.Recv(t, rec.ch, "event").Position() // processed up to here
	}
	first.Close()

	second := dial(t, h.WS(), nil)
	rec2 := newRecorder(100)
	if _, err := second.SubscribeWith(ctx(t), "n.*", &SubscribeOptions{Since: since}, rec2.handle); err != nil {
		t.Fatal(err)
	}
	h.Publish("n.5", 5)
	for _, want := range []string{"3", "4", "5"} {
		if ev := testkit.Recv(t, rec2.ch, "event"); string(ev.Data) != want || ev.Missed {
			t.Fatalf("got %+v, want data %s", ev, want)
		}
	}

	// From another epoch: Missed first, then what the hub holds.
	third := dial(t, h.WS(), nil)
	rec3 := newRecorder(100)
	if _, err := third.SubscribeWith(ctx(t), "n.4", &SubscribeOptions{Since: Position{Epoch: "gone", Seq: 99}}, rec3.handle); err != nil {
		t.Fatal(err)
	}
	if ev := testkit.Recv(t, rec3.ch, "missed"); !ev.Missed {
		t.Fatalf("got %+v, want Missed", ev)
	}
	if ev := testkit.Recv(t, rec3.ch, "event"); string(ev.Data) != "4" {
		t.Fatalf("got %+v", ev)
	}
}

// TestMissedWhenBehind: a handler EventBuffer events behind loses
// events, and is told so in order.
func TestMissedWhenBehind(t *testing.T) {
	h := hubtest.Start(t, nil)
	c := dial(t, h.WS(), &Options{EventBuffer: 4})
	gate := make(chan struct{})
	entered := make(chan struct{}, 1)
	handled := make(chan struct{}, 32)
	var got []Event
	done := make(chan struct{})
	if _, err := c.Subscribe(ctx(t), "b", func(ev Event) {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-gate
		got = append(got, ev)
		handled <- struct{}{}
		if string(ev.Data) == `"end"` {
			close(done)
		}
	}); err != nil {
		t.Fatal(err)
	}
	// The handler holds the first event, so the buffer behind it fills
	// with the next four and the rest are dropped.
	h.Publish("b", 0)
	testkit.Recv(t, entered, "the first event")
	for i := 1; i < 20; i++ {
		h.Publish("b", i)
	}
	// A round trip: the events before it are queued or dropped by now.
	if err := c.Call(ctx(t), "rpc.ping", nil, nil); err != nil {
		t.Fatal(err)
	}
	close(gate)
	// The held event and the four queued behind it are handled before
	// "end" is published: "end" must find room, not be dropped as well.
	for range 5 {
		testkit.Recv(t, handled, "the events queued before the drops")
	}
	h.Publish("b", "end")
	testkit.Recv(t, done, "end")
	var kinds []string
	for _, ev := range got {
		if ev.Missed {
			kinds = append(kinds, "missed")
		} else {
			kinds = append(kinds, string(ev.Data))
		}
	}
	if s := strings.Join(kinds, " "); !strings.HasSuffix(s, "missed \"end\"") || strings.Count(s, "missed") != 1 {
		t.Fatalf("got %s: want the first events, one Missed, then end", s)
	}
}

func TestPresenceAndHistory(t *testing.T) {
	h := hubtest.Start(t, &hubtest.Options{Server: serverWithUsers()})
	watcherConn := dial(t, h.WS(), &Options{Token: "t-alice"})
	changes := make(chan PresenceChange, 10)
	if _, err := watcherConn.SubscribeWith(ctx(t), "room.1", &SubscribeOptions{
		OnPresence: func(pc PresenceChange) { changes <- pc },
	}, func(Event) {}); err != nil {
		t.Fatal(err)
	}
	bob := dial(t, h.WS(), &Options{Token: "t-bob"})
	bs, err := bob.Subscribe(ctx(t), "room.*", func(Event) {})
	if err != nil {
		t.Fatal(err)
	}
	pc := testkit.Recv(t, changes, "join")
	if !pc.Join || pc.Topic != "room.1" || pc.Peer.User != "bob" || pc.Peer.ID == "" {
		t.Fatalf("got %+v", pc)
	}
	peers, err := watcherConn.Presence(ctx(t), "room.1")
	if err != nil || len(peers) != 2 {
		t.Fatalf("Presence = %v, %v", peers, err)
	}
	users := []string{peers[0].User, peers[1].User}
	if !(users[0] == "alice" && users[1] == "bob" || users[0] == "bob" && users[1] == "alice") {
		t.Fatalf("Presence users %v", users)
	}
	if err := bs.Unsubscribe(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if pc := testkit.Recv(t, changes, "leave"); pc.Join || pc.Peer.User != "bob" {
		t.Fatalf("got %+v", pc)
	}

	for i := range 5 {
		h.Publish("hist.x", i)
	}
	hist, err := bob.History(ctx(t), "hist.*", 3, Position{})
	if err != nil {
		t.Fatal(err)
	}
	if len(hist.Events) != 3 || string(hist.Events[2].Data) != "4" || hist.Events[0].Seq != hist.Seq-2 || hist.Events[0].Epoch != hist.Epoch {
		t.Fatalf("History = %+v", hist)
	}
	hist, err = bob.History(ctx(t), "hist.x", 0, Position{Epoch: hist.Epoch, Seq: hist.Seq - 1})
	if err != nil || len(hist.Events) != 1 {
		t.Fatalf("History since = %+v, %v", hist, err)
	}
}

// serverWithUsers authenticates the tokens t-alice and t-bob.
func serverWithUsers() server.Options {
	return server.Options{Authenticate: server.TokenAuth(map[string]string{"t-alice": "alice", "t-bob": "bob"})}
}

func TestResubscribeParams(t *testing.T) {
	subs := map[*Subscription]struct{}{}
	add := func(pattern string, pos Position, presence bool) {
		s := &Subscription{pattern: pattern, pos: pos, known: true}
		if presence {
			s.onPresence = func(PresenceChange) {}
		}
		subs[s] = struct{}{}
	}
	add("a", Position{"e", 7}, false)
	add("a", Position{}, true) // not started: no position of its own
	add("a", Position{"e", 3}, false)
	add("b", Position{}, false)
	for range 10 { // whatever the map's order
		params := resubscribeParams(subs)
		if len(params) != 2 {
			t.Fatalf("params %+v", params)
		}
		for _, p := range params {
			switch {
			case p.Topic == "a" && (p.Since == nil || *p.Since != Position{"e", 3} || !p.Presence):
				t.Fatalf("a: %+v since %v; want since e:3, with presence", p, p.Since)
			case p.Topic == "b" && (p.Since != nil || p.Presence):
				t.Fatalf("b: %+v", p)
			}
		}
	}
	for s := range subs {
		if s.known {
			t.Fatal("a subscription still marked started")
		}
	}
}
