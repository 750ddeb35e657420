package hub_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/internal/hubtest"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
)

// event is an rpc.event's params.
type event struct {
	Topic  string          `json:"topic"`
	Data   json.RawMessage `json:"data"`
	Seq    uint64          `json:"seq"`
	Epoch  string          `json:"epoch"`
	Replay string          `json:"replay,omitempty"`
}

// client is the far end of a peer joined to a hub over an in-memory pipe.
type client struct {
	*peer.Conn
	p      *hub.Peer
	events chan event
}

// connect joins a new peer to h, served with identity, and returns the
// client end. Everything is closed at the end of the test.
func connect(t *testing.T, h *hub.Hub, identity any, router peer.Router) *client {
	t.Helper()
	ta, tb := peer.NewPipeTransport()
	events := make(chan event, 100)
	if router == nil {
		router = eventRouter(events)
	}
	srv := peer.NewConn(tb, &peer.Options{Router: h.Router(nil)})
	p := h.Join(srv, "", identity)
	c := peer.NewConn(ta, &peer.Options{Router: router})
	var wg sync.WaitGroup
	wg.Go(func() { _ = srv.Serve(hub.WithIdentity(context.Background(), identity)) })
	wg.Go(func() { _ = c.Serve(context.Background()) })
	t.Cleanup(func() {
		c.Close()
		wg.Wait()
		h.Leave(p)
	})
	return &client{Conn: c, p: p, events: events}
}

type routerFunc func(string) (peer.Handler, peer.Mode)

func (f routerFunc) Lookup(m string) (peer.Handler, peer.Mode) { return f(m) }

// eventRouter serves rpc.event by sending the params to ch, in order, on
// the reader (ch must have room).
func eventRouter(ch chan<- event) peer.Router {
	return routerFunc(func(method string) (peer.Handler, peer.Mode) {
		if method != "rpc.event" {
			return nil, peer.Concurrent
		}
		return peer.Func(func(_ context.Context, e event) (any, error) {
			ch <- e
			return nil, nil
		}), peer.Inline
	})
}

func ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Wait)
	t.Cleanup(cancel)
	return ctx
}

func (c *client) next(t *testing.T) event {
	t.Helper()
	return testkit.Recv(t, c.events, "an event")
}

// noEvent checks that no event is waiting, after a round trip to the hub
// has flushed whatever was sent before it.
func (c *client) noEvent(t *testing.T) {
	t.Helper()
	nonePending(t, c, c.events, "unexpected event %+v")
}

func subscribe(t *testing.T, c *client, params any) []string {
	t.Helper()
	var res struct{ Topics []string }
	if err := c.Call(ctx(t), "rpc.subscribe", params, &res); err != nil {
		t.Fatalf("subscribe %v: %v", params, err)
	}
	return res.Topics
}

func publish(t *testing.T, c *client, params any) int {
	t.Helper()
	var res struct{ Delivered int }
	if err := c.Call(ctx(t), "rpc.publish", params, &res); err != nil {
		t.Fatalf("publish %v: %v", params, err)
	}
	return res.Delivered
}

func TestSubscribePublish(t *testing.T) {
	h := hub.New(&hub.Options{Policy: hub.AllowAll})
	a := connect(t, h, nil, nil)
	b := connect(t, h, nil, nil)
	c := connect(t, h, nil, nil)

	if got := subscribe(t, a, map[string]string{"topic": "chat.*"}); !slices.Equal(got, []string{"chat.*"}) {
		t.Fatalf("subscribe by name = %q", got)
	}
	if got := subscribe(t, b, []string{"chat.>", "news", "chat.>"}); !slices.Equal(got, []string{"chat.>", "news"}) {
		t.Fatalf("subscribe by position = %q", got)
	}
	if n := publish(t, c, map[string]any{"topic": "chat.room1", "data": map[string]int{"n": 1}}); n != 2 {
		t.Fatalf("delivered %d, want 2", n)
	}
	for _, cl := range []*client{a, b} {
		e := cl.next(t)
		if e.Topic != "chat.room1" || string(e.Data) != `{"n":1}` {
			t.Fatalf("event = %+v", e)
		}
	}
	if n := publish(t, c, []any{"chat.room1.x", 2}); n != 1 {
		t.Fatalf("chat.room1.x delivered %d, want 1 (only chat.>)", n)
	}
	if e := b.next(t); e.Topic != "chat.room1.x" || string(e.Data) != "2" {
		t.Fatalf("event = %+v", e)
	}
	a.noEvent(t)
	c.noEvent(t)

	// Publish without data sends null; publish as a notification works.
	if err := c.Notify(ctx(t), "rpc.publish", []string{"news"}); err != nil {
		t.Fatal(err)
	}
	if e := b.next(t); e.Topic != "news" || string(e.Data) != "null" {
		t.Fatalf("event = %+v", e)
	}

	var un struct{ Topics []string }
	if err := b.Call(ctx(t), "rpc.unsubscribe", []string{"news", "nope"}, &un); err != nil || !slices.Equal(un.Topics, []string{"news"}) {
		t.Fatalf("unsubscribe = %q, %v", un.Topics, err)
	}
	if n := publish(t, c, []any{"news", 1}); n != 0 {
		t.Fatalf("after unsubscribe delivered %d", n)
	}
	if got := b.p.Topics(); !slices.Equal(got, []string{"chat.>"}) {
		t.Fatalf("Topics = %q", got)
	}
}

func TestOverlappingPatternsDeliverOnce(t *testing.T) {
	h := hub.New(&hub.Options{Policy: hub.AllowAll})
	a := connect(t, h, nil, nil)
	subscribe(t, a, []string{"x.y", "x.*", "x.>", ">", "*.y"})
	if n := publish(t, a, []any{"x.y", "once"}); n != 1 {
		t.Fatalf("delivered %d, want 1", n)
	}
	a.next(t)
	a.noEvent(t)
}

func TestSubscribeThenPublishInOrder(t *testing.T) {
	// The hub methods are serial: a subscribe and a publish sent without
	// waiting take effect in order, so the publisher sees its own event.
	h := hub.New(&hub.Options{Policy: hub.AllowAll})
	a := connect(t, h, nil, nil)
	batch := []peer.BatchElem{
		{Method: "rpc.subscribe", Params: []string{"t"}, Notify: true},
		{Method: "rpc.publish", Params: []any{"t", 1}, Notify: true},
	}
	for _, e := range batch {
		if err := a.Notify(ctx(t), e.Method, e.Params); err != nil {
			t.Fatal(err)
		}
	}
	if e := a.next(t); e.Topic != "t" {
		t.Fatalf("event = %+v", e)
	}
}

func TestInvalidParams(t *testing.T) {
	h := hub.New(&hub.Options{Policy: hub.AllowAll})
	a := connect(t, h, nil, nil)
	for _, tt := range []struct {
		method string
		params any
	}{
		{"rpc.subscribe", nil},
		{"rpc.subscribe", []string{}},
		{"rpc.subscribe", map[string]string{}},
		{"rpc.subscribe", []string{"a..b"}},
		{"rpc.subscribe", []string{"ok", "a.>.b"}},
		{"rpc.subscribe", []int{1}},
		{"rpc.subscribe", map[string]int{"topic": 1}},
		{"rpc.unsubscribe", []string{""}},
		{"rpc.publish", nil},
		{"rpc.publish", []any{}},
		{"rpc.publish", []any{"a.*", 1}},
		{"rpc.publish", []any{"a.>", 1}},
		{"rpc.publish", []any{1, 1}},
		{"rpc.publish", []any{"a", 1, 2}},
		{"rpc.publish", map[string]any{"data": 1}},
		{"rpc.publish", map[string]any{"topic": "bad topic"}},
	} {
		t.Run(fmt.Sprint(tt.method, tt.params), func(t *testing.T) {
			hubtest.WantCode(t, a.Call(ctx(t), tt.method, tt.params, nil), peer.CodeInvalidParams)
		})
	}
	if got := a.p.Topics(); len(got) != 0 {
		t.Fatalf("a failed subscribe left %q", got)
	}
}

func TestDefaultPolicy(t *testing.T) {
	h := hub.New(nil)
	a := connect(t, h, nil, nil)
	subscribe(t, a, []string{"news"})
	hubtest.WantCode(t, a.Call(ctx(t), "rpc.publish", []any{"news", 1}, nil), peer.CodeUnauthorized)
	// Go code may publish.
	n, err := h.Publish(ctx(t), "news", "from go")
	if err != nil || n != 1 {
		t.Fatalf("Publish = %d, %v", n, err)
	}
	if e := a.next(t); string(e.Data) != `"from go"` {
		t.Fatalf("event = %+v", e)
	}
}

func TestPolicySeesIdentity(t *testing.T) {
	policy := hub.Policy(func(ctx context.Context, a hub.Action, topic string) error {
		who, _ := hub.Identity(ctx).(string)
		switch {
		case a == hub.Subscribe && topic == "admin.>" && who != "root":
			return errors.New("admins only")
		case a == hub.Publish && who != "root":
			return peer.Errorf(4001, "read-only user")
		}
		return nil
	})
	h := hub.New(&hub.Options{Policy: policy})
	root := connect(t, h, "root", nil)
	user := connect(t, h, "alice", nil)

	subscribe(t, root, []string{"admin.>"})
	hubtest.WantCode(t, user.Call(ctx(t), "rpc.subscribe", []string{"news", "admin.>"}, nil), peer.CodeUnauthorized)
	if got := user.p.Topics(); len(got) != 0 {
		t.Fatalf("refused subscribe left %q", got)
	}
	hubtest.WantCode(t, user.Call(ctx(t), "rpc.publish", []any{"admin.x", 1}, nil), 4001)
	if n := publish(t, root, []any{"admin.x", 1}); n != 1 {
		t.Fatalf("delivered %d", n)
	}
}

func TestMaxSubscriptions(t *testing.T) {
	h := hub.New(&hub.Options{Policy: hub.AllowAll, MaxSubscriptions: 2})
	a := connect(t, h, nil, nil)
	subscribe(t, a, []string{"a", "b"})
	subscribe(t, a, []string{"a"}) // already there: no new one
	hubtest.WantCode(t, a.Call(ctx(t), "rpc.subscribe", []string{"c"}, nil), peer.CodeOverloaded)
	if st := h.Stats(); st.Subscriptions != 2 {
		t.Fatalf("Subscriptions = %d", st.Subscriptions)
	}
}

// A topic or pattern over MaxTopicLength is refused with -32602, and the
// hub counts the refusals of both limits.
func TestMaxTopicLength(t *testing.T) {
	h := hub.New(&hub.Options{Policy: hub.AllowAll, MaxTopicLength: 8, MaxSubscriptions: 1})
	a := connect(t, h, nil, nil)
	hubtest.WantCode(t, a.Call(ctx(t), "rpc.subscribe", []string{"abcdefghi"}, nil), peer.CodeInvalidParams)
	hubtest.WantCode(t, a.Call(ctx(t), "rpc.publish", []any{"abcdefghi", 1}, nil), peer.CodeInvalidParams)
	subscribe(t, a, []string{"abcdefgh"}) // at the limit: fine
	hubtest.WantCode(t, a.Call(ctx(t), "rpc.subscribe", []string{"b"}, nil), peer.CodeOverloaded)
	if st := h.Stats(); st.OverTopicLength != 2 || st.OverSubscriptions != 1 {
		t.Fatalf("Stats = %+v, want 2 topics too long and 1 subscribe over the limit", st)
	}
}

func TestNoConnection(t *testing.T) {
	// Served without a connection (HTTP POST), subscriptions fail at once;
	// publish, history and presence work.
	h := hub.New(&hub.Options{Policy: hub.AllowAll})
	opts := &peer.Options{Router: h.Router(nil)}
	for _, tt := range []struct{ in, want string }{
		{`{"jsonrpc":"2.0","method":"rpc.subscribe","params":["a"],"id":1}`,
			`{"jsonrpc":"2.0","error":{"code":-32000,"message":"rpc.subscribe needs a WebSocket connection to deliver events to"},"id":1}`},
		{`{"jsonrpc":"2.0","method":"rpc.unsubscribe","params":["a"],"id":2}`,
			`{"jsonrpc":"2.0","error":{"code":-32000,"message":"rpc.unsubscribe needs a WebSocket connection to deliver events to"},"id":2}`},
		{`{"jsonrpc":"2.0","method":"rpc.publish","params":["a",1],"id":3}`,
			`{"jsonrpc":"2.0","result":{"delivered":0,"seq":1,"epoch":"EPOCH"},"id":3}`},
		{`{"jsonrpc":"2.0","method":"rpc.history","params":{"topic":"a"},"id":4}`,
			`{"jsonrpc":"2.0","result":{"epoch":"EPOCH","seq":1,"events":[{"topic":"a","data":1,"seq":1}]},"id":4}`},
		{`{"jsonrpc":"2.0","method":"rpc.presence","params":["a"],"id":5}`,
			`{"jsonrpc":"2.0","result":{"peers":[]},"id":5}`},
	} {
		got := peer.Respond(ctx(t), []byte(tt.in), opts)
		var g, w any
		_ = json.Unmarshal(got, &g)
		_ = json.Unmarshal([]byte(strings.ReplaceAll(tt.want, "EPOCH", h.Position().Epoch)), &w)
		if fmt.Sprint(g) != fmt.Sprint(w) {
			t.Errorf("%s\n got %s\nwant %s", tt.in, got, tt.want)
		}
	}
}

func TestRouterDelegates(t *testing.T) {
	h := hub.New(nil)
	app := peer.NewMux()
	app.Handle("add", peer.Func(func(_ context.Context, p [2]int) (int, error) { return p[0] + p[1], nil }))
	r := h.Router(app)
	if hd, _ := r.Lookup("add"); hd == nil {
		t.Fatal("add not delegated")
	}
	if hd, _ := r.Lookup("rpc.discover"); hd == nil {
		t.Fatal("rpc.discover not delegated")
	}
	if hd, _ := r.Lookup("nope"); hd != nil {
		t.Fatal("unknown method found")
	}
	for _, m := range []string{"rpc.subscribe", "rpc.unsubscribe", "rpc.publish"} {
		if hd, _ := r.Lookup(m); hd == nil {
			t.Fatalf("%s not served", m)
		}
	}
	if hd, _ := h.Router(nil).Lookup("add"); hd != nil {
		t.Fatal("nil app router served add")
	}
}

func TestRegistry(t *testing.T) {
	var mu sync.Mutex
	var joined, left []string
	h := hub.New(&hub.Options{
		OnJoin:  func(p *hub.Peer) { mu.Lock(); joined = append(joined, p.ID()); mu.Unlock() },
		OnLeave: func(p *hub.Peer) { mu.Lock(); left = append(left, p.ID()); mu.Unlock() },
	})
	mux := peer.NewMux()
	mux.Handle("whoami", peer.Func(func(context.Context, struct{}) (string, error) { return "browser", nil }))
	a := connect(t, h, "alice", mux)
	if got := h.Peer(a.p.ID()); got != a.p || got.Identity() != "alice" || got.Conn() == nil {
		t.Fatalf("Peer(%s) = %v", a.p.ID(), got)
	}
	if ps := h.Peers(); len(ps) != 1 || ps[0] != a.p {
		t.Fatalf("Peers = %v", ps)
	}
	// The server calls the browser.
	var who string
	if err := a.p.Conn().Call(ctx(t), "whoami", nil, &who); err != nil || who != "browser" {
		t.Fatalf("Call = %q, %v", who, err)
	}
	if err := a.p.Conn().Notify(ctx(t), "whoami", nil); err != nil {
		t.Fatal(err)
	}
	h.Leave(a.p)
	h.Leave(a.p) // twice is fine
	if h.Peer(a.p.ID()) != nil || len(h.Peers()) != 0 {
		t.Fatal("peer still registered after Leave")
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(joined, []string{a.p.ID()}) || !slices.Equal(left, []string{a.p.ID()}) {
		t.Fatalf("joined %q, left %q", joined, left)
	}
}

func TestPublishErrors(t *testing.T) {
	h := hub.New(nil)
	if _, err := h.Publish(ctx(t), "a.*", 1); !errors.Is(err, hub.ErrInvalidTopic) {
		t.Fatalf("wildcard topic: %v", err)
	}
	if _, err := h.Publish(ctx(t), "a", func() {}); err == nil {
		t.Fatal("unencodable data: no error")
	}
	cctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := h.Publish(cctx, "a", 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled ctx: %v", err)
	}
}

func TestEventsInPublishOrder(t *testing.T) {
	h := hub.New(&hub.Options{Policy: hub.AllowAll})
	const subs, msgs = 20, 200
	clients := make([]*client, subs)
	for i := range clients {
		events := make(chan event, msgs)
		clients[i] = connect(t, h, nil, eventRouter(events))
		clients[i].events = events
		subscribe(t, clients[i], []string{"seq"})
	}
	for i := range msgs {
		if n, err := h.Publish(ctx(t), "seq", i); err != nil || n != subs {
			t.Fatalf("Publish %d = %d, %v", i, n, err)
		}
	}
	for _, c := range clients {
		for i := range msgs {
			if e := c.next(t); string(e.Data) != fmt.Sprint(i) {
				t.Fatalf("event %d has data %s", i, e.Data)
			}
		}
	}
	st := h.Stats()
	if st.Published != msgs || st.Delivered != subs*msgs || st.Dropped != 0 {
		t.Fatalf("Stats = %+v", st)
	}
}

func TestSlowSubscriberClosed(t *testing.T) {
	h := hub.New(&hub.Options{Policy: hub.AllowAll})
	// A peer whose transport never writes: its queue fills up.
	stuck := make(chan struct{})
	defer close(stuck)
	srv := peer.NewConn(stallTransport{stuck}, &peer.Options{MaxQueue: 4})
	p := h.Join(srv, "slow", nil)
	defer h.Leave(p)
	if err := p.Subscribe("t"); err != nil {
		t.Fatal(err)
	}
	delivered := 0
	for i := range 10 {
		n, err := h.Publish(ctx(t), "t", i)
		if err != nil {
			t.Fatal(err)
		}
		delivered += n
	}
	st := h.Stats()
	if st.SlowClosed != 1 || st.Dropped != uint64(10-delivered) || delivered >= 10 {
		t.Fatalf("delivered %d, Stats = %+v", delivered, st)
	}
	if !errors.Is(srv.Err(), peer.ErrTooSlow) {
		t.Fatalf("conn err = %v, want ErrTooSlow", srv.Err())
	}
}

// stallTransport never completes a write until stuck is closed, and never
// reads anything.
type stallTransport struct{ stuck chan struct{} }

func (s stallTransport) Read(ctx context.Context) ([]byte, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-s.stuck:
		return nil, &peer.CloseError{Code: 1000}
	}
}

func (s stallTransport) Write(ctx context.Context, _ []byte) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-s.stuck:
		return errors.New("closed")
	}
}

func (stallTransport) Close(int, string) error { return nil }

// TestOneOrderForAll: with several publishers at once, every subscriber
// sees the same sequence of events.
func TestOneOrderForAll(t *testing.T) {
	const subs, pubs, each = 5, 4, 100
	h := hub.New(&hub.Options{Policy: hub.AllowAll})
	clients := make([]*client, subs)
	for i := range clients {
		events := make(chan event, pubs*each)
		clients[i] = connect(t, h, nil, eventRouter(events))
		clients[i].events = events
		subscribe(t, clients[i], []string{"all"})
	}
	var wg sync.WaitGroup
	for p := range pubs {
		wg.Go(func() {
			for i := range each {
				if _, err := h.Publish(context.Background(), "all", fmt.Sprintf("%d-%d", p, i)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	var first []string
	for i, c := range clients {
		var seq []string
		for range pubs * each {
			seq = append(seq, string(c.next(t).Data))
		}
		if i == 0 {
			first = seq
		} else if !slices.Equal(seq, first) {
			t.Fatalf("subscriber %d saw another order", i)
		}
	}
}
