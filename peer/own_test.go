package peer

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// ownPair connects a Conn whose callers read their own replies, over a
// GatherConn as the client package dials it, to a server Conn with
// srvOpts, which it returns too.
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
	var gc *GatherConn
	hc := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			nc, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			gc = NewGatherConn(nc)
			return gc, nil
		},
	}}
	ws, _, err := websocket.Dial(t.Context(), "ws://"+ts.Listener.Addr().String(), &websocket.DialOptions{HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	ws.SetReadLimit(-1)
	if opts == nil {
		opts = new(Options)
	}
	opts.CallerReads = true
	if NewConn(WebSocketOver(ws, gc), opts).ownReads {
		t.Fatal("callers read without the poll waker, which the role passes through")
	}
	opts.PollWake = true
	c = NewConn(WebSocketOver(ws, gc), opts)
	if !c.ownReads {
		t.Fatal("callers do not read over WebSocketOver")
	}
	go c.Serve(context.Background()) //nolint:errcheck
	srv = <-srvc
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
	for c.role.Load() != want {
		if time.Now().After(deadline) {
			t.Fatalf("reader role %d, want %d", c.role.Load(), want)
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
		if c.role.Load() == roleParked {
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
		reading := c.role.Load() == roleCaller
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

// serverFrame is a frame as a server sends it: not masked.
func serverFrame(fin bool, op byte, payload []byte) []byte {
	f := clientFrame(fin, op, payload)
	f[1] &^= 0x80
	at := bytes.Index(f, []byte{1, 2, 3, 4})
	return append(f[:at], payload...)
}

func TestFrameTrack(t *testing.T) {
	type step struct {
		frame   []byte
		between bool // after the frame
	}
	steps := []step{
		{serverFrame(true, 1, []byte("hi")), true},
		{serverFrame(true, 1, nil), true},
		{serverFrame(false, 1, []byte("part")), false},
		{serverFrame(true, 9, []byte("ping")), false}, // a control frame inside a message
		{serverFrame(true, 0, []byte("end")), true},
		{serverFrame(true, 10, nil), true}, // a control frame between messages
		{serverFrame(true, 2, bytes.Repeat([]byte{'x'}, 126)), true},
		{serverFrame(true, 1, bytes.Repeat([]byte{'y'}, 70000)), true},
		{clientFrame(true, 1, []byte("masked")), true},
	}
	// Fed whole, and a byte at a time, after the handshake's response:
	// between is true exactly at the end of a message.
	resp := []byte("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n")
	f := frameTrack{inHead: true}
	f.feed(resp)
	for i, s := range steps {
		f.feed(s.frame)
		if f.between() != s.between {
			t.Fatalf("whole, after frame %d: between %v", i, f.between())
		}
	}
	f = frameTrack{inHead: true}
	for j := range resp {
		if f.between() {
			t.Fatalf("between after %d bytes of the response", j)
		}
		f.feed(resp[j : j+1])
	}
	for i, s := range steps {
		for j := range s.frame {
			f.feed(s.frame[j : j+1])
			if j < len(s.frame)-1 && f.between() {
				t.Fatalf("bytewise, frame %d: between after %d of %d bytes", i, j+1, len(s.frame))
			}
		}
		if f.between() != s.between {
			t.Fatalf("bytewise, after frame %d: between %v", i, f.between())
		}
	}
}

// TestGatherConnInterrupt checks that an interrupted read returns
// errInterrupted only between two messages.
func TestGatherConnInterrupt(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dialed := make(chan net.Conn, 1)
	go func() {
		nc, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			close(dialed)
			return
		}
		dialed <- nc
	}()
	sc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	nc, ok := <-dialed
	if !ok {
		t.Fatal("dial failed")
	}
	gc := NewGatherConn(nc)
	defer gc.Close()
	buf := make([]byte, 64)

	// Within the handshake's response: not interrupted.
	resp := []byte("HTTP/1.1 101 Switching Protocols\r\n\r\n")
	if _, err := sc.Write(resp[:10]); err != nil {
		t.Fatal(err)
	}
	if n, err := readFull(gc, buf[:10]); err != nil || n != 10 {
		t.Fatalf("read %d, %v", n, err)
	}
	gc.interruptRead()
	wrote := make(chan error, 1)
	go func() {
		_, err := sc.Write(resp[10:])
		wrote <- err
	}()
	if n, err := readFull(gc, buf[:len(resp)-10]); err != nil || n != len(resp)-10 {
		t.Fatalf("read %d, %v; want the rest of the response", n, err)
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}

	// Between messages, at the start: interrupted.
	gc.interruptRead()
	if _, err := gc.Read(buf); !errors.Is(err, errInterrupted) {
		t.Fatalf("read at a message boundary: %v, want errInterrupted", err)
	}
	// And reading goes on afterwards.
	msg := serverFrame(true, 1, []byte("hello"))
	if _, err := sc.Write(msg); err != nil {
		t.Fatal(err)
	}
	if n, err := readFull(gc, buf[:len(msg)]); err != nil || !bytes.Equal(buf[:n], msg) {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	// In the middle of a message, the interrupted read waits for the rest.
	msg = serverFrame(true, 1, []byte("world"))
	if _, err := sc.Write(msg[:4]); err != nil {
		t.Fatal(err)
	}
	if n, err := readFull(gc, buf[:4]); err != nil || n != 4 {
		t.Fatalf("read %d, %v", n, err)
	}
	gc.interruptRead()
	errc := make(chan error, 1)
	go func() {
		_, err := readFull(gc, buf[4:len(msg)])
		errc <- err
	}()
	if _, err := sc.Write(msg[4:]); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil || !bytes.Equal(buf[:len(msg)], msg) {
		t.Fatalf("read %q, %v; want the whole message", buf[:len(msg)], err)
	}
	// Back at a boundary, a new interruption works again.
	gc.interruptRead()
	if _, err := gc.Read(buf); !errors.Is(err, errInterrupted) {
		t.Fatalf("read at a message boundary: %v, want errInterrupted", err)
	}
}

// readFull reads len(b) bytes from c.
func readFull(c net.Conn, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		k, err := c.Read(b[n:])
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
