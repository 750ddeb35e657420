package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/internal/hubtest"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
	"github.com/switchboard-rpc/switchboard/server"
	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// wait bounds every wait for an event in these tests.
const wait = testkit.Wait

func dial(t *testing.T, url string, o *Options) *Client {
	t.Helper()
	if o == nil {
		o = &Options{}
	}
	if o.Logger == nil {
		o.Logger = zaptest.NewLogger(t)
	}
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	c, err := Dial(ctx, url, o)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	t.Cleanup(cancel)
	return ctx
}

// stateLog records the states a client goes through.
type stateLog struct {
	mu  sync.Mutex
	all []State
	ch  chan State
}

func newStateLog() *stateLog { return &stateLog{ch: make(chan State, 100)} }

func (l *stateLog) on(s State, _ error) {
	l.mu.Lock()
	l.all = append(l.all, s)
	l.mu.Unlock()
	select {
	case l.ch <- s:
	default:
	}
}

// until waits for state s, for the test's wait in all: a client that
// keeps changing state without reaching s fails too.
func (l *stateLog) until(t *testing.T, s State) {
	t.Helper()
	deadline := time.After(wait)
	for {
		select {
		case got := <-l.ch:
			if got == s {
				return
			}
		case <-deadline:
			t.Fatalf("timed out waiting for state %s", s)
		}
	}
}

func TestCallBothWays(t *testing.T) {
	h := hubtest.Start(t, nil)
	mux := peer.NewMux()
	mux.Handle("greet", peer.Func(func(_ context.Context, p struct{ Name string }) (string, error) {
		return "hello " + p.Name, nil
	}))
	c := dial(t, h.WS(), &Options{Router: mux})

	var sum float64
	if err := c.Call(ctx(t), "add", []int{1, 2}, &sum); err != nil || sum != 3 {
		t.Fatalf("add = %v, %v; want 3", sum, err)
	}
	var raw json.RawMessage
	if err := c.Call(ctx(t), "echo", map[string]any{"x": []int{1}}, &raw); err != nil || string(raw) != `{"x":[1]}` {
		t.Fatalf("echo = %s, %v", raw, err)
	}
	// The hub calls the client's greet over the same connection.
	var got string
	err := c.Call(ctx(t), "callback", map[string]any{"method": "greet", "params": []string{"gopher"}}, &got)
	if err != nil || got != "hello gopher" {
		t.Fatalf("callback greet = %q, %v", got, err)
	}
	// An unknown method on the client comes back through the hub as -32601.
	err = c.Call(ctx(t), "callback", map[string]any{"method": "nope"}, nil)
	var perr *peer.Error
	if !errors.As(err, &perr) || perr.Code != peer.CodeMethodNotFound {
		t.Fatalf("callback nope: %v; want -32601", err)
	}
	// The hub's own API calls the client too.
	peers := h.Hub().Peers()
	if len(peers) != 1 {
		t.Fatalf("hub has %d peers", len(peers))
	}
	if err := peers[0].Conn().Call(ctx(t), "greet", map[string]string{"Name": "hub"}, &got); err != nil || got != "hello hub" {
		t.Fatalf("hub calls greet: %q, %v", got, err)
	}
	if err := c.Notify(ctx(t), "echo", []int{1}); err != nil {
		t.Fatalf("Notify: %v", err)
	}
	err = c.Call(ctx(t), "no_such_method", nil, nil)
	if !errors.As(err, &perr) || perr.Code != peer.CodeMethodNotFound {
		t.Fatalf("unknown method: %v", err)
	}
}

func TestBatch(t *testing.T) {
	h := hubtest.Start(t, nil)
	c := dial(t, h.WS(), nil)
	hc := NewHTTP(h.HTTP(), nil)
	defer hc.Close()
	for name, batch := range map[string]func(context.Context, []peer.BatchElem) error{
		"ws": c.Batch, "http": hc.Batch,
	} {
		t.Run(name, func(t *testing.T) {
			var a, b float64
			var e json.RawMessage
			elems := []peer.BatchElem{
				{Method: "add", Params: []int{1, 2}, Result: &a},
				{Method: "add", Params: map[string]int{"a": 10, "b": 5}, Result: &b},
				{Method: "echo", Params: []string{"x"}, Result: &e},
				{Method: "echo", Params: []int{0}, Notify: true},
				{Method: "missing"},
			}
			if err := batch(ctx(t), elems); err != nil {
				t.Fatal(err)
			}
			if a != 3 || b != 15 || string(e) != `["x"]` {
				t.Errorf("results %v %v %s", a, b, e)
			}
			for i := range 4 {
				if elems[i].Err != nil {
					t.Errorf("element %d: %v", i, elems[i].Err)
				}
			}
			var perr *peer.Error
			if !errors.As(elems[4].Err, &perr) || perr.Code != peer.CodeMethodNotFound {
				t.Errorf("missing: %v", elems[4].Err)
			}
		})
	}
}

func TestSubscribe(t *testing.T) {
	h := hubtest.Start(t, nil)
	c := dial(t, h.WS(), nil)
	pub := NewHTTP(h.HTTP(), nil)
	defer pub.Close()

	news := make(chan Event, 1000)
	sub, err := c.Subscribe(ctx(t), "news.>", func(ev Event) { news <- ev })
	if err != nil {
		t.Fatal(err)
	}
	other := make(chan Event, 10)
	if _, err := c.Subscribe(ctx(t), "other", func(ev Event) { other <- ev }); err != nil {
		t.Fatal(err)
	}

	const n = 200
	for i := range n {
		if _, err := pub.Publish(ctx(t), fmt.Sprintf("news.n%d", i%3), i); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pub.Publish(ctx(t), "news", "not matched: > needs a word"); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		ev := testkit.Recv(t, news, "event")
		if string(ev.Data) != fmt.Sprint(i) || ev.Topic != fmt.Sprintf("news.n%d", i%3) {
			t.Fatalf("event %d: %s %s", i, ev.Topic, ev.Data)
		}
	}

	if err := sub.Unsubscribe(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Publish(ctx(t), "news.late", 1); err != nil {
		t.Fatal(err)
	}
	// Events are delivered in order, so once "other" sees this one the
	// hub has handled the one before it.
	if n, err := c.Publish(ctx(t), "other", "marker"); err != nil || n != 1 {
		t.Fatalf("publish other: %d, %v", n, err)
	}
	testkit.Recv(t, other, "marker")
	select {
	case ev := <-news:
		t.Fatalf("event after Unsubscribe: %s %s", ev.Topic, ev.Data)
	default:
	}
}

func TestReconnect(t *testing.T) {
	h := hubtest.Start(t, nil)
	states := newStateLog()
	mux := peer.NewMux()
	mux.Handle("ping2", peer.Func(func(context.Context, struct{}) (string, error) { return "pong", nil }))
	c := dial(t, h.WS(), &Options{
		Router:     mux,
		MinBackoff: 10 * time.Millisecond,
		MaxBackoff: 100 * time.Millisecond,
		OnState:    states.on,
	})
	events := make(chan Event, 100)
	if _, err := c.Subscribe(ctx(t), "room.*", func(ev Event) { events <- ev }); err != nil {
		t.Fatal(err)
	}
	if n := h.Publish("room.1", "before"); n != 1 {
		t.Fatalf("delivered %d", n)
	}
	if ev := testkit.Recv(t, events, "event"); string(ev.Data) != `"before"` {
		t.Fatalf("got %s", ev.Data)
	}

	for round := range 2 {
		h.Stop()
		states.until(t, StateDisconnected)
		if c.State() == StateConnected {
			t.Fatal("still connected")
		}
		h.Start()
		states.until(t, StateConnected)

		// Re-subscribed: an event published now arrives, after word
		// that events may have been missed (a new hub knows nothing of
		// the old one's history).
		if n := h.Publish("room.2", round); n != 1 {
			t.Fatalf("round %d: delivered to %d peers after reconnect", round, n)
		}
		if ev := testkit.Recv(t, events, "missed"); !ev.Missed {
			t.Fatalf("got %+v, want Missed", ev)
		}
		if ev := testkit.Recv(t, events, "event after reconnect"); string(ev.Data) != fmt.Sprint(round) {
			t.Fatalf("got %s", ev.Data)
		}
		// And it still serves its methods.
		var got string
		if err := c.Call(ctx(t), "callback", map[string]string{"method": "ping2"}, &got); err != nil || got != "pong" {
			t.Fatalf("callback after reconnect: %q, %v", got, err)
		}
	}
	c.Close()
	states.until(t, StateClosed)
}

func TestOutage(t *testing.T) {
	h := hubtest.Start(t, nil)
	states := newStateLog()
	c := dial(t, h.WS(), &Options{
		MinBackoff: 20 * time.Millisecond,
		MaxBackoff: 50 * time.Millisecond,
		OnState:    states.on,
	})

	// A call in flight when the hub shuts down: it runs on for the grace
	// period, then the hub cancels it and says so before it closes.
	inflight := make(chan error, 1)
	running := make(chan struct{})
	var once sync.Once
	pctx := peer.WithProgress(ctx(t), func(json.RawMessage) { once.Do(func() { close(running) }) })
	go func() { inflight <- c.Call(pctx, "sleep", map[string]int{"ms": 5000}, nil) }()
	testkit.Recv(t, running, "the sleep call's first progress report")
	h.Stop()
	err := testkit.Recv(t, inflight, "in-flight call")
	if !errors.Is(err, &peer.Error{Code: peer.CodeCancelled}) {
		t.Fatalf("in-flight call: %v; want -32002 from the hub's shutdown", err)
	}
	states.until(t, StateDisconnected)

	// Fail fast, per call.
	start := time.Now()
	err = c.Call(WithFailFast(ctx(t), true), "echo", []int{1}, nil)
	if !errors.Is(err, ErrDisconnected) {
		t.Fatalf("fail-fast call: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("fail-fast call took %v", d)
	}
	// A waiting call whose context ends first.
	short, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if err := c.Call(short, "echo", []int{1}, nil); !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrDisconnected) {
		t.Fatalf("waiting call, short ctx: %v", err)
	}

	// Waiting calls go through once the hub is back.
	waited := make(chan error, 3)
	for range 3 {
		go func() {
			var res json.RawMessage
			err := c.Call(ctx(t), "echo", []string{"back"}, &res)
			if err == nil && string(res) != `["back"]` {
				err = fmt.Errorf("got %s", res)
			}
			waited <- err
		}()
	}
	select {
	case err := <-waited:
		t.Fatalf("waiting call returned during the outage: %v", err)
	case <-time.After(100 * time.Millisecond): // not a synchronization: checks that it waits
	}
	h.Start()
	for range 3 {
		if err := testkit.Recv(t, waited, "waiting call"); err != nil {
			t.Fatalf("waiting call: %v", err)
		}
	}

	// The option, for the whole client.
	states2 := newStateLog()
	c2 := dial(t, h.WS(), &Options{FailFast: true, MinBackoff: time.Hour, OnState: states2.on})
	h.Stop()
	states2.until(t, StateDisconnected)
	if err := c2.Call(ctx(t), "echo", []int{1}, nil); !errors.Is(err, ErrDisconnected) {
		t.Fatalf("FailFast client: %v", err)
	}
	h.Start()
}

func TestGiveUp(t *testing.T) {
	h := hubtest.Start(t, nil)
	c := dial(t, h.WS(), &Options{MaxAttempts: 2, MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond})
	h.Stop()
	testkit.Recv(t, c.Done(), "client to give up")
	if err := c.Err(); !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "gave up after 2 attempts") {
		t.Fatalf("Err = %v", err)
	}
	if err := c.Call(ctx(t), "echo", nil, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("call after giving up: %v", err)
	}
	if _, err := c.Subscribe(ctx(t), "x", func(Event) {}); !errors.Is(err, ErrClosed) {
		t.Fatalf("subscribe after giving up: %v", err)
	}
}

func TestDialError(t *testing.T) {
	h := hubtest.Start(t, nil)
	h.Stop()
	_, err := Dial(ctx(t), h.WS(), nil)
	if err == nil || !strings.Contains(err.Error(), "dial "+h.WS()) || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("Dial to a closed port: %v", err)
	}
}

func TestHTTP(t *testing.T) {
	h := hubtest.Start(t, nil)
	hc := NewHTTP(h.HTTP(), &HTTPOptions{Token: "secret"})
	defer hc.Close()
	var sum float64
	if err := hc.Call(ctx(t), "add", []int{2, 3}, &sum); err != nil || sum != 5 {
		t.Fatalf("add = %v, %v", sum, err)
	}
	if err := hc.Notify(ctx(t), "echo", []int{1}); err != nil {
		t.Fatalf("notify: %v", err)
	}
	var perr *peer.Error
	if err := hc.Call(ctx(t), "nope", nil, nil); !errors.As(err, &perr) || perr.Code != peer.CodeMethodNotFound {
		t.Fatalf("nope: %v", err)
	}
	if err := hc.Call(ctx(t), "echo", 42, nil); !errors.As(err, &perr) || perr.Code != peer.CodeInvalidParams {
		t.Fatalf("scalar params: %v", err)
	}
	h.Stop()
	if err := hc.Call(ctx(t), "add", []int{2, 3}, &sum); err == nil || !strings.Contains(err.Error(), h.HTTP()) {
		t.Fatalf("call to a stopped hub: %v", err)
	}
}

func TestToken(t *testing.T) {
	h := hubtest.Start(t, &hubtest.Options{
		Server: server.Options{Authenticate: server.TokenAuth(map[string]string{"s3cret": "alice"})},
	})
	var se *StatusError
	var perr *peer.Error
	_, err := Dial(ctx(t), h.WS(), nil)
	if !errors.As(err, &se) || se.StatusCode != 401 || !errors.As(err, &perr) || perr.Code != peer.CodeUnauthorized {
		t.Fatalf("Dial without a token: %v; want HTTP 401 with -32001", err)
	}
	c := dial(t, h.WS(), &Options{Token: "s3cret"})
	if err := c.Call(ctx(t), "echo", []int{1}, nil); err != nil {
		t.Fatal(err)
	}
	if p := h.Hub().Peers(); len(p) != 1 || p[0].Identity() != "alice" {
		t.Fatalf("peers %v", p)
	}

	hc := NewHTTP(h.HTTP(), nil)
	defer hc.Close()
	err = hc.Call(ctx(t), "echo", []int{1}, nil)
	if !errors.As(err, &se) || se.StatusCode != 401 || !errors.As(err, &perr) || perr.Code != peer.CodeUnauthorized {
		t.Fatalf("POST without a token: %v; want HTTP 401 with -32001", err)
	}
	hc2 := NewHTTP(h.HTTP(), &HTTPOptions{Header: http.Header{"Authorization": {"Bearer s3cret"}}})
	defer hc2.Close()
	if err := hc2.Call(ctx(t), "echo", []int{1}, nil); err != nil {
		t.Fatalf("POST with the header: %v", err)
	}
}

func TestSamePatternTwice(t *testing.T) {
	h := hubtest.Start(t, nil)
	c := dial(t, h.WS(), nil)
	a, b := make(chan Event, 10), make(chan Event, 10)
	subA, err := c.Subscribe(ctx(t), "t.*", func(ev Event) { a <- ev })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Subscribe(ctx(t), "t.*", func(ev Event) { b <- ev }); err != nil {
		t.Fatal(err)
	}
	// Overlapping patterns each get the event; the hub sends it once.
	wide := make(chan Event, 10)
	if _, err := c.Subscribe(ctx(t), ">", func(ev Event) { wide <- ev }); err != nil {
		t.Fatal(err)
	}
	if n := h.Publish("t.1", 1); n != 1 {
		t.Fatalf("delivered %d", n)
	}
	testkit.Recv(t, a, "a")
	testkit.Recv(t, b, "b")
	testkit.Recv(t, wide, "wide")

	// Closing one leaves the hub subscription for the other.
	if err := subA.Close(); err != nil {
		t.Fatal(err)
	}
	h.Publish("t.2", 2)
	if ev := testkit.Recv(t, b, "b after closing a"); string(ev.Data) != "2" {
		t.Fatalf("got %s", ev.Data)
	}
	testkit.Recv(t, wide, "wide")
	select {
	case ev := <-a:
		t.Fatalf("closed subscription got %s", ev.Data)
	default:
	}
	if topics := h.Hub().Peers()[0].Topics(); len(topics) != 2 {
		t.Fatalf("hub topics %v; want > and t.*", topics)
	}
}

// TestEventForms sends events the way the hub does not (in batches, or
// malformed, or with extra fields) from a bare peer, and checks that every
// well-formed one is delivered, those sent on their own in order.
func TestEventForms(t *testing.T) {
	router := routerFunc(func(method string) (peer.Handler, peer.Mode) {
		if method != "rpc.subscribe" {
			return nil, peer.Concurrent
		}
		return peer.HandlerFunc(func(ctx context.Context, req *peer.Request) (any, error) {
			c := peer.ConnFromContext(ctx)
			for _, m := range []string{
				`{"jsonrpc":"2.0","method":"rpc.event","params":{"topic":"a","data":1}}`,
				`{"jsonrpc":"2.0","method":"rpc.event","params":{"data":"no topic"}}`,
				`[{"jsonrpc":"2.0","method":"rpc.event","params":{"topic":"a","data":2}},` +
					`{"jsonrpc":"2.0","method":"rpc.event","params":{"topic":"a","data":3}}]`,
				`{"jsonrpc":"2.0","method":"rpc.event","params":{"topic":"a","data":4,"seq":99}}`,
				`[{"jsonrpc":"2.0","method":"rpc.event","params":{"topic":"a","data":5}},{"jsonrpc":"2.0","method":"rpc.ping"}]`,
				`{"jsonrpc":"2.0","method":"rpc.event","params":{"topic":"a","data":6}}`,
			} {
				if err := c.Post([]byte(m)); err != nil {
					return nil, err
				}
			}
			return map[string]any{"topics": []string{"a"}}, nil
		}), peer.Concurrent
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		_ = peer.NewConn(peer.WebSocket(ws), &peer.Options{Router: router}).Serve(r.Context())
	}))
	defer srv.Close()

	c := dial(t, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	got := make(chan string, 10)
	if _, err := c.Subscribe(ctx(t), "a", func(ev Event) { got <- string(ev.Data) }); err != nil {
		t.Fatal(err)
	}
	var order []string
	seen := map[string]bool{}
	for range 6 {
		ev := testkit.Recv(t, got, "event")
		seen[ev] = true
		if ev == "1" || ev == "4" || ev == "6" {
			order = append(order, ev)
		}
	}
	if len(seen) != 6 || fmt.Sprint(order) != "[1 4 6]" {
		t.Fatalf("got %v, singles in order %v; want 1 to 6, singles [1 4 6]", seen, order)
	}
	c.Close()
}

type routerFunc func(string) (peer.Handler, peer.Mode)

func (f routerFunc) Lookup(m string) (peer.Handler, peer.Mode) { return f(m) }

// TestPing connects to a server that reads but never answers, as a dead
// connection would look: the unanswered ping closes it and the client
// dials again.
func TestPing(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer ws.CloseNow()
		for {
			if _, _, err := ws.Read(r.Context()); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	causes := make(chan error, 10)
	c := dial(t, "ws"+strings.TrimPrefix(srv.URL, "http"), &Options{
		PingInterval: 50 * time.Millisecond,
		PingTimeout:  50 * time.Millisecond,
		MinBackoff:   10 * time.Millisecond,
		OnState: func(s State, err error) {
			if s == StateDisconnected {
				causes <- err
			}
		},
	})
	err := testkit.Recv(t, causes, "the ping to fail")
	if !errors.Is(err, ErrConnectionLost) || !strings.Contains(err.Error(), "rpc.ping") {
		t.Fatalf("cause %v", err)
	}
	c.Close()
}

// TestCloseDuringOutage closes a client that is waiting to reconnect, with
// a call waiting for the connection: both end at once, and no goroutine
// is left.
func TestCloseDuringOutage(t *testing.T) {
	before := goleak.IgnoreCurrent()
	h := hubtest.Start(t, nil)
	states := newStateLog()
	c, err := Dial(ctx(t), h.WS(), &Options{MinBackoff: time.Hour, OnState: states.on})
	if err != nil {
		t.Fatal(err)
	}
	events := make(chan Event, 1)
	if _, err := c.Subscribe(ctx(t), "x", func(ev Event) { events <- ev }); err != nil {
		t.Fatal(err)
	}
	h.Stop()
	states.until(t, StateDisconnected)

	waiting := make(chan error, 1)
	go func() { waiting <- c.Call(ctx(t), "echo", nil, nil) }()
	start := time.Now()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Close took %v", d)
	}
	if err := testkit.Recv(t, waiting, "the waiting call"); !errors.Is(err, ErrClosed) {
		t.Errorf("waiting call: %v; want ErrClosed", err)
	}
	states.until(t, StateClosed)
	goleak.VerifyNone(t, before)
}

func TestNoReconnect(t *testing.T) {
	h := hubtest.Start(t, nil)
	c := dial(t, h.WS(), &Options{MaxAttempts: -1})
	h.Stop()
	testkit.Recv(t, c.Done(), "the client to close")
	if err := c.Err(); !errors.Is(err, ErrClosed) || !errors.Is(err, peer.ErrClosed) {
		t.Fatalf("Err = %v; want ErrClosed with the connection's error", err)
	}
}

func TestCallCancelled(t *testing.T) {
	h := hubtest.Start(t, nil)
	c := dial(t, h.WS(), nil)
	short, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := c.Call(short, "sleep", map[string]int{"ms": 5000}, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("sleep: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("call returned after %v", d)
	}
	// The connection is still good.
	if err := c.Call(ctx(t), "echo", nil, nil); err != nil {
		t.Fatal(err)
	}
}

// Options.CallTimeout bounds a call made on a live connection, whose ctx
// has no deadline, without a deadline of the client's own.
func TestCallTimeoutLive(t *testing.T) {
	h := hubtest.Start(t, nil)
	c := dial(t, h.WS(), &Options{CallTimeout: 100 * time.Millisecond})
	start := time.Now()
	if err := c.Call(context.Background(), "sleep", map[string]int{"ms": 60_000}, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("sleep: %v", err)
	}
	// Far from the minute of the sleep, however loaded the machine.
	if d := time.Since(start); d < 100*time.Millisecond || d > wait {
		t.Fatalf("call returned after %v, want about 100ms", d)
	}
	// With a deadline of its own: a loaded machine may take longer than
	// CallTimeout to answer it.
	var sum float64
	if err := c.Call(ctx(t), "add", []int{1, 2}, &sum); err != nil || sum != 3 {
		t.Fatalf("add after the timeout = %v, %v", sum, err)
	}
}

func TestTLS(t *testing.T) {
	h := hubtest.Start(t, &hubtest.Options{TLS: true})
	roots := x509.NewCertPool()
	roots.AddCert(h.Certificate())
	opts := &Options{TLSConfig: &tls.Config{RootCAs: roots}}

	c := dial(t, h.WS(), opts)
	var sum float64
	if err := c.Call(ctx(t), "add", []int{1, 2}, &sum); err != nil || sum != 3 {
		t.Fatalf("wss add = %v, %v", sum, err)
	}
	hc := NewHTTP(h.HTTP(), &HTTPOptions{TLSConfig: opts.TLSConfig})
	defer hc.Close()
	if err := hc.Call(ctx(t), "add", []int{2, 2}, &sum); err != nil || sum != 4 {
		t.Fatalf("https add = %v, %v", sum, err)
	}
	c.Close()

	// Without the test CA, the certificate is refused.
	if _, err := Dial(ctx(t), h.WS(), nil); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("Dial without the CA: %v", err)
	}
}

// TestOnStateCalls calls the client from OnState when it is back.
func TestOnStateCalls(t *testing.T) {
	h := hubtest.Start(t, nil)
	var cp atomic.Pointer[Client]
	results := make(chan error, 10)
	connected := 0
	c := dial(t, h.WS(), &Options{
		MinBackoff: 10 * time.Millisecond,
		OnState: func(s State, _ error) {
			if s != StateConnected {
				return
			}
			if connected++; connected == 2 { // back after the restart
				results <- cp.Load().Call(context.Background(), "echo", []string{"hi"}, nil)
			}
		},
	})
	cp.Store(c)
	h.Stop()
	h.Start()
	if err := testkit.Recv(t, results, "the call from OnState"); err != nil {
		t.Fatal(err)
	}
}

// TestResubscribeRace subscribes and unsubscribes the same pattern from
// many goroutines; whatever the interleaving, the hub must end up
// subscribed exactly when a subscription remains.
func TestResubscribeRace(t *testing.T) {
	h := hubtest.Start(t, nil)
	c := dial(t, h.WS(), nil)
	keep, err := c.Subscribe(ctx(t), "r", func(Event) {})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				s, err := c.Subscribe(ctx(t), "r", func(Event) {})
				if err != nil {
					t.Error(err)
					return
				}
				if err := s.Unsubscribe(ctx(t)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if topics := h.Hub().Peers()[0].Topics(); fmt.Sprint(topics) != "[r]" {
		t.Fatalf("hub topics %v with one subscription left", topics)
	}
	if err := keep.Close(); err != nil {
		t.Fatal(err)
	}
	if topics := h.Hub().Peers()[0].Topics(); len(topics) != 0 {
		t.Fatalf("hub topics %v with none left", topics)
	}
}

// TestSubscribeTimeoutTakesItBack gives up on an rpc.subscribe that the
// hub applies late: the client must take the subscription back, or the hub
// would send it events nobody listens to.
func TestSubscribeTimeoutTakesItBack(t *testing.T) {
	gaveUp := make(chan struct{})
	h := hub.New(&hub.Options{Policy: hub.Policy(func(_ context.Context, a hub.Action, topic string) error {
		if a == hub.Subscribe && topic == "late" {
			<-gaveUp // answer only once the caller has stopped waiting
		}
		return nil
	})})
	ts := httptest.NewServer(server.New(&server.Options{Hub: h, Logger: zaptest.NewLogger(t)}))
	defer ts.Close()
	c := dial(t, "ws"+strings.TrimPrefix(ts.URL, "http")+"/rpc", nil)

	sctx, cancel := context.WithTimeout(ctx(t), 50*time.Millisecond)
	_, err := c.Subscribe(sctx, "late", func(Event) {})
	cancel()
	close(gaveUp)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Subscribe: %v, want a deadline error", err)
	}
	// The hub reads a connection's rpc.subscribe, rpc.unsubscribe and
	// rpc.ping in order, so once the ping is answered the take-back has
	// been applied.
	if err := c.Call(ctx(t), "rpc.ping", nil, nil); err != nil {
		t.Fatal(err)
	}
	if n := h.Stats().Subscriptions; n != 0 {
		t.Fatalf("hub has %d subscriptions after a timed-out Subscribe, want 0", n)
	}
	c.Close()
}
