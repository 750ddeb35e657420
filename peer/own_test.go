package peer

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/switchboard-rpc/switchboard/internal/gather"
)

// ownPair connects a Conn whose callers read their own replies, over a
// WebSocket dialed as the client package dials it (gather.Dialed), to a
// server Conn with srvOpts, which it returns too.
func ownPair(t *testing.T, opts, srvOpts *Options) (c, srv *Conn) {
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
	var gc *gather.Conn
	hc := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			nc, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			gc = gather.New(nc)
			return gc, nil
		},
	}}
	ws, _, err := websocket.Dial(t.Context(), "ws://"+ts.Listener.Addr().String(), &websocket.DialOptions{HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	ws.SetReadLimit(-1)
	if gather.Dialed(ws, nil).(interrupter).canInterrupt() {
		t.Fatal("reads can be interrupted on a dialed WebSocket whose network connection is not known")
	}
	c = NewConn(gather.Dialed(ws, gc).(Transport), opts)
	if !c.ownReads {
		t.Fatal("callers do not read over a WebSocket the client package dials")
	}
	go c.Serve(context.Background()) //nolint:errcheck
	srv = <-srvc
	if srv.ownReads {
		t.Fatal("a served connection's callers read their own replies")
	}
	t.Cleanup(func() {
		c.Close()
		<-c.Done()
		<-done
	})
	return c, srv
}

// waitRole waits until the reader role is in state want.
func waitRole(t *testing.T, c *Conn, want int32) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for c.roleAt.Load() != want {
		if time.Now().After(deadline) {
			t.Fatalf("reader role %d, want %d", c.roleAt.Load(), want)
		}
		time.Sleep(time.Millisecond)
	}
}

// parkedCall makes a call, after which the role is parked: the reader
// handed it over with the reply. The timer may have given it back
// already on a slow machine, so it calls until it sees it parked.
func parkedCall(t *testing.T, c *Conn) { parkedCallCtx(t, t.Context(), c) }

// parkedCallCtx is parkedCall with calls made with ctx.
func parkedCallCtx(t *testing.T, ctx context.Context, c *Conn) {
	t.Helper()
	for range 1000 {
		if err := c.Call(ctx, "rpc.ping", nil, nil); err != nil {
			t.Fatal(err)
		}
		if c.roleAt.Load() == roleParked {
			return
		}
	}
	t.Fatal("the reader role was never parked after a call")
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
	// Left parked, the role goes back to a reader goroutine.
	waitRole(t, c, roleReader)
}

// TestParkedRoleEvents checks that what the other side sends while
// nobody reads (the role parked after a call) still arrives: a
// notification, and a call, which is answered.
func TestParkedRoleEvents(t *testing.T) {
	got := make(chan string, 1)
	m := NewMux()
	m.HandleFunc("note", func(_ context.Context, req *Request) (any, error) {
		got <- string(req.Params)
		return nil, nil
	})
	m.Handle("greet", Func(func(_ context.Context, p []string) (string, error) {
		return "hello " + p[0], nil
	}))
	c, srv := ownPair(t, &Options{Router: m}, &Options{Router: specMux()})
	parkedCall(t, c)
	if err := srv.Notify(t.Context(), "note", []int{7}); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-got:
		if p != "[7]" {
			t.Fatalf("notification params %s", p)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the notification did not arrive")
	}
	parkedCall(t, c)
	var s string
	if err := srv.Call(t.Context(), "greet", []string{"you"}, &s); err != nil || s != "hello you" {
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
	// The blocked call must be the one reading. On a slow machine the park
	// timer may give the role to a reader goroutine before the call
	// starts: then the case is tried again.
	for attempt := 0; ; attempt++ {
		if attempt == 10 {
			t.Fatal("the blocked call never read for the connection")
		}
		ctx, cancel := context.WithCancel(t.Context())
		parkedCallCtx(t, ctx, c)
		parkedCallCtx(t, ctx, c)
		errc := make(chan error, 1)
		go func() { errc <- c.Call(ctx, "block", nil, nil) }()
		<-started
		reading := c.roleAt.Load() == roleCaller
		cancel()
		select {
		case err := <-errc:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Call returned %v, want context.Canceled", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a cancelled call reading for the connection did not return")
		}
		if reading {
			break
		}
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
	parkedCall(t, c)
	errc := make(chan error, 1)
	go func() { errc <- c.Call(context.Background(), "block", nil, nil) }()
	select {
	case err := <-errc:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("got %v, want DeadlineExceeded", err)
		}
	case <-time.After(5 * time.Second):
		c.Close() // ends the call, for the test to end
		<-errc
		t.Fatal("a call reading for the connection outlived its CallTimeout")
	}
	<-started
	var sum float64
	if err := c.Call(t.Context(), "add", []int{2, 3}, &sum); err != nil || sum != 5 {
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
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Close with the role parked: the connection did not end")
	}

	c, srv := ownPair(t, nil, &Options{Router: specMux()})
	parkedCall(t, c)
	srv.CloseWith(CloseGoingAway, "bye")
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("closed by the other side with the role parked: the connection did not end")
	}
	var ce *CloseError
	if err := c.Err(); !errors.As(err, &ce) || ce.Code != CloseGoingAway {
		t.Fatalf("Err %v, want the other side's 1001", err)
	}
}

// parkedForGood parks the reader role after a call and stops the timer
// that would give it back: only what waits can get a reader now.
func parkedForGood(t *testing.T, c *Conn) {
	t.Helper()
	for range 100 {
		parkedCall(t, c)
		c.parkTimer.Stop()
		if c.roleAt.Load() == roleParked {
			return
		}
	}
	t.Fatal("the reader role was never left parked")
}

// TestParkedRoleWaiters checks that whatever waits for a message it will
// not read itself gives a parked role to a reader goroutine, rather than
// waiting for the park timer: a batch, a Ping, and a call that did not
// take the role, registered after the role was parked.
func TestParkedRoleWaiters(t *testing.T) {
	c, _ := ownPair(t, nil, &Options{Router: specMux()})
	within := func(what string, f func() error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
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

	parkedForGood(t, c)
	var sum float64
	within("Batch", func() error {
		elems := []BatchElem{{Method: "add", Params: []int{1, 2}, Result: &sum}}
		if err := c.Batch(t.Context(), elems); err != nil {
			return err
		}
		return elems[0].Err
	})

	parkedForGood(t, c)
	within("Ping", func() error { return c.Ping(t.Context()) })

	// A call that found the role held, registered once it was parked:
	// the steps of Call with the role taken by someone else meanwhile.
	parkedForGood(t, c)
	within("a call that did not take the role", func() error {
		p := &pendingCall{ch: make(chan reply, 1)}
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
