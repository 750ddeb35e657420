package peer

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/internal/transport"
)

// ownPair connects a Conn whose callers read their own replies, over a
// WebSocket dialed as the client package dials it (transport.Dialed), to a
// server Conn with srvOpts, which it returns too. The Conn's park timer
// is a heldTimer: a role parked stays parked until the test fires it
// (fireParkTimer), or something that waits takes it.
func ownPair(t *testing.T, opts, srvOpts *Options) (c, srv *Conn) {
	t.Helper()
	return ownPairTimer(t, opts, srvOpts, new(heldTimer))
}

// heldTimer stands in for a connection's park timer: it never fires by
// itself. armed: it was reset since it last fired.
type heldTimer struct{ armed atomic.Bool }

func (h *heldTimer) Reset(time.Duration) bool { return h.armed.Swap(true) }

// fireParkTimer fires c's heldTimer, as if parkTime had passed since the
// role was parked; the role must be parked, and the timer armed.
func fireParkTimer(t *testing.T, c *Conn) {
	t.Helper()
	if h := c.role.holder(); h != roleParked {
		t.Fatalf("the park timer fires with the role held by %d", h)
	}
	if !c.role.own.timer.(*heldTimer).armed.Swap(false) {
		t.Fatal("the role is parked, and its timer not armed")
	}
	c.role.own.until.Store(0) // its time has passed
	c.unpark()
}

// ownPairTimer is ownPair with timer as the park timer; nil keeps the
// connection's own.
func ownPairTimer(t *testing.T, opts, srvOpts *Options, timer parkTimer) (c, srv *Conn) {
	t.Helper()
	srvc := make(chan *Conn, 1)
	done := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(done)
		tr, _, err := AcceptWebSocket(w, r, nil)
		if err != nil {
			return
		}
		s := NewConn(tr, srvOpts)
		srvc <- s
		s.Serve(r.Context()) //nolint:errcheck
	}))
	t.Cleanup(ts.Close)
	var gc *transport.Conn
	hc := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			nc, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			gc = transport.New(nc)
			return gc, nil
		},
	}}
	ws, _, err := websocket.Dial(t.Context(), "ws://"+ts.Listener.Addr().String(), &websocket.DialOptions{HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	ws.SetReadLimit(-1)
	if transport.Dialed(ws, nil).Interrupt != nil {
		t.Fatal("reads can be interrupted on a dialed WebSocket whose network connection is not known")
	}
	c = NewConn(withCaps{WebSocket(ws), transport.Dialed(ws, gc)}, opts)
	if c.role.own == nil {
		t.Fatal("callers do not read over a WebSocket the client package dials")
	}
	if timer != nil {
		c.role.own.timer = timer
	}
	go c.Serve(context.Background()) //nolint:errcheck
	srv = <-srvc
	if srv.role.own != nil {
		t.Fatal("a served connection's callers read their own replies")
	}
	t.Cleanup(func() {
		c.Close()
		<-c.Done()
		<-done
	})
	return c, srv
}

// withCaps is a Transport with the capabilities caps, as the client
// package makes one.
type withCaps struct {
	Transport
	caps transport.Caps
}

func (t withCaps) Capabilities() transport.Caps { return t.caps }

// wantRole fails the test unless the reader role is held by want.
func wantRole(t *testing.T, c *Conn, want state) {
	t.Helper()
	if h := c.role.holder(); h != want {
		t.Fatalf("the reader role is held by %d, want %d", h, want)
	}
}

// parkedCall makes a call alone, after which the role is parked: the
// reader, or the caller itself, parked it with the reply, and the
// heldTimer leaves it parked.
func parkedCall(t *testing.T, c *Conn) { parkedCallCtx(t, t.Context(), c) }

// parkedCallCtx is parkedCall with a call made with ctx. A ctx without a
// deadline leaves the call to the connection's CallTimeout.
func parkedCallCtx(t *testing.T, ctx context.Context, c *Conn) {
	t.Helper()
	// The reader hands the role over only to a caller waiting on the poll
	// waker, and a loaded machine's slow wakes make the next skipCalls
	// calls wait on their channels instead.
	c.wk.skip.Store(0)
	if err := c.Call(ctx, "rpc.ping", nil, nil); err != nil {
		t.Fatal(err)
	}
	wantRole(t, c, roleParked)
}

func TestCallerReadsOwnReply(t *testing.T) {
	c, _ := ownPair(t, nil, &Options{Router: specMux()})
	parkedCall(t, c)
	// Calls made one after another: each takes the parked role, reads
	// its reply and parks the role again; the results are right.
	for i := range 200 {
		var sum float64
		if err := c.Call(t.Context(), "add", []int{i, 1}, &sum); err != nil || sum != float64(i+1) {
			t.Fatalf("call %d: %v %v", i, sum, err)
		}
	}
	// Left parked, the role goes back to a reader goroutine when the
	// timer fires.
	fireParkTimer(t, c)
	wantRole(t, c, roleReader)
}

// noteMux serves the notification "note", whose params it sends on got.
func noteMux() (m *Mux, got chan string) {
	got = make(chan string, 1)
	m = NewMux()
	m.HandleFunc("note", func(_ context.Context, req *Request) (any, error) {
		got <- string(req.Params)
		return nil, nil
	})
	return m, got
}

// TestParkTimer checks that the park timer itself gives a parked role
// back: a notification sent after a call, with nobody calling, arrives.
func TestParkTimer(t *testing.T) {
	m, got := noteMux()
	c, srv := ownPairTimer(t, &Options{Router: m}, &Options{Router: specMux()}, nil)
	c.wk.skip.Store(0) // the role is parked as the call returns (see parkedCall)
	if err := c.Call(t.Context(), "rpc.ping", nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := srv.Notify(t.Context(), "note", []int{7}); err != nil {
		t.Fatal(err)
	}
	if p := testkit.Recv(t, got, "the notification"); p != "[7]" {
		t.Fatalf("notification params %s", p)
	}
}

// TestParkedRoleEvents checks that what the other side sends while
// nobody reads (the role parked after a call) still arrives: a
// notification, and a call, which is answered.
func TestParkedRoleEvents(t *testing.T) {
	m, got := noteMux()
	m.Handle("greet", Func(func(_ context.Context, p []string) (string, error) {
		return "hello " + p[0], nil
	}))
	c, srv := ownPair(t, &Options{Router: m}, &Options{Router: specMux()})
	parkedCall(t, c)
	if err := srv.Notify(t.Context(), "note", []int{7}); err != nil {
		t.Fatal(err)
	}
	fireParkTimer(t, c)
	if p := testkit.Recv(t, got, "the notification"); p != "[7]" {
		t.Fatalf("notification params %s", p)
	}
	parkedCall(t, c)
	errc := make(chan error, 1)
	var s string
	go func() { errc <- srv.Call(t.Context(), "greet", []string{"you"}, &s) }()
	fireParkTimer(t, c)
	if err := testkit.Recv(t, errc, "the answer to greet"); err != nil || s != "hello you" {
		t.Fatalf("greet: %q %v", s, err)
	}
}

// blockMux serves "block", which returns once release is closed or its
// context ends; started receives a value as it begins.
func blockMux() (m *Mux, started chan struct{}, release chan struct{}) {
	started, release = make(chan struct{}, 16), make(chan struct{})
	m = specMux()
	m.HandleFunc("block", func(ctx context.Context, _ *Request) (any, error) {
		started <- struct{}{}
		select {
		case <-release:
			return "released", nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	return m, started, release
}

// TestCallerReadingCancelled checks that a call whose caller reads for
// the connection returns when its context ends: the read is interrupted
// between two messages, and the connection goes on as before. The calls
// before it were made with the same context, whose watch they share.
func TestCallerReadingCancelled(t *testing.T) {
	m, started, _ := blockMux()
	c, _ := ownPair(t, nil, &Options{Router: m})
	parkedCall(t, c) // with another context first
	ctx, cancel := context.WithCancel(t.Context())
	parkedCallCtx(t, ctx, c)
	parkedCallCtx(t, ctx, c)
	// The blocked call takes the parked role: it is the one reading.
	errc := make(chan error, 1)
	go func() { errc <- c.Call(ctx, "block", nil, nil) }()
	testkit.Recv(t, started, "the blocked call to start")
	wantRole(t, c, roleCaller)
	cancel()
	if err := testkit.Recv(t, errc, "the cancelled call to return"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Call returned %v, want context.Canceled", err)
	}
	var sum float64
	if err := c.Call(t.Context(), "add", []int{2, 3}, &sum); err != nil || sum != 5 {
		t.Fatalf("after the interrupted read: %v %v", sum, err)
	}
}

// TestCallerReadingTimesOut is the same for Options.CallTimeout.
func TestCallerReadingTimesOut(t *testing.T) {
	m, started, _ := blockMux()
	c, _ := ownPair(t, &Options{CallTimeout: 200 * time.Millisecond}, &Options{Router: m})
	// The other calls have a deadline of their own, which CallTimeout
	// leaves alone: on a loaded machine, one may take longer than it.
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Wait)
	defer cancel()
	parkedCallCtx(t, ctx, c)
	// The blocked call takes the parked role: it is the one reading,
	// until its CallTimeout interrupts its read and it parks the role
	// again, which a loaded machine may see done already. A reader
	// goroutine never holds it meanwhile.
	errc := make(chan error, 1)
	go func() { errc <- c.Call(context.Background(), "block", nil, nil) }()
	testkit.Recv(t, started, "the blocked call to start")
	if h := c.role.holder(); h != roleCaller && h != roleParked {
		t.Fatalf("the reader role is held by %d while the blocked call waits", h)
	}
	if err := testkit.Recv(t, errc, "the call to end at its CallTimeout"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want DeadlineExceeded", err)
	}
	wantRole(t, c, roleParked)
	var sum float64
	if err := c.Call(ctx, "add", []int{2, 3}, &sum); err != nil || sum != 5 {
		t.Fatalf("after the interrupted read: %v %v", sum, err)
	}
}

// TestCallerReadingGetsCall checks that a call from the other side,
// read by a caller waiting for its reply, is served while that caller
// still waits: it runs on a reader goroutine, not on the caller's.
func TestCallerReadingGetsCall(t *testing.T) {
	m, started, release := blockMux()
	cm := NewMux()
	cm.Handle("greet", Func(func(_ context.Context, p []string) (string, error) {
		return "hello " + p[0], nil
	}))
	c, srv := ownPair(t, &Options{Router: cm}, &Options{Router: m})
	parkedCall(t, c)
	errc := make(chan error, 1)
	var res string
	go func() { errc <- c.Call(t.Context(), "block", nil, &res) }()
	<-started
	var s string
	if err := srv.Call(t.Context(), "greet", []string{"you"}, &s); err != nil || s != "hello you" {
		t.Fatalf("greet: %q %v", s, err)
	}
	close(release)
	if err := <-errc; err != nil || res != "released" {
		t.Fatalf("block: %q %v", res, err)
	}
}

// TestCallerReadsConcurrent mixes callers that read with callers that
// wait, under the race detector.
func TestCallerReadsConcurrent(t *testing.T) {
	c, _ := ownPair(t, nil, &Options{Router: specMux()})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				var sum float64
				if err := c.Call(t.Context(), "add", []int{g, i}, &sum); err != nil || sum != float64(g+i) {
					t.Errorf("goroutine %d call %d: %v %v", g, i, sum, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestParkedRoleClose checks that a connection closes whole while its
// reader role is parked, from either side.
func TestParkedRoleClose(t *testing.T) {
	c, _ := ownPair(t, nil, &Options{Router: specMux()})
	parkedCall(t, c)
	c.Close()
	testkit.Recv(t, c.Done(), "the end of a connection closed with the role parked")

	c, srv := ownPair(t, nil, &Options{Router: specMux()})
	parkedCall(t, c)
	srv.CloseWith(CloseGoingAway, "bye")
	fireParkTimer(t, c) // nobody reads until then
	testkit.Recv(t, c.Done(), "the end of a connection closed by the other side with the role parked")
	var ce *CloseError
	if err := c.Err(); !errors.As(err, &ce) || ce.Code != CloseGoingAway {
		t.Fatalf("Err %v, want the other side's 1001", err)
	}
}

// TestParkedRoleWaiters checks that whatever waits for a message it will
// not read itself gives a parked role to a reader goroutine, rather than
// waiting for the park timer: a batch, a Ping, and a call that did not
// take the role, registered after the role was parked.
func TestParkedRoleWaiters(t *testing.T) {
	c, _ := ownPair(t, nil, &Options{Router: specMux()})
	within := func(what string, f func() error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), testkit.Wait)
		defer cancel()
		errc := make(chan error, 1)
		go func() { errc <- f() }()
		select {
		case err := <-errc:
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		case <-ctx.Done():
			c.Close() // ends the wait, for the test to end
			<-errc
			t.Fatalf("%s waited with the reader role parked and nobody reading", what)
		}
	}

	parkedCall(t, c)
	var sum float64
	within("Batch", func() error {
		elems := []BatchElem{{Method: "add", Params: []int{1, 2}, Result: &sum}}
		if err := c.Batch(t.Context(), elems); err != nil {
			return err
		}
		return elems[0].Err
	})

	parkedCall(t, c)
	within("Ping", func() error { return c.Ping(t.Context()) })

	// A call that found the role held, registered once it was parked:
	// the steps of Call with the role taken by someone else meanwhile.
	parkedCall(t, c)
	within("a call that did not take the role", func() error {
		p := newPendingCall()
		id, err := c.addPending(p, false)
		if err != nil {
			return err
		}
		if err := c.send(t.Context(), appendRequest(nil, []byte(strconv.FormatUint(id, 10)), "rpc.ping", nil)); err != nil {
			return err
		}
		r, _ := c.await(t.Context(), id, p)
		return r.err
	})
}
