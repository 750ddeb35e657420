package peer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

// forwarder is a Router that forwards every call to the other side of
// out, as a hub forwards a provided method.
type forwarder struct {
	out     *Conn
	timeout time.Duration
	relay   bool // Relay, else Forward
}

func (f forwarder) Lookup(string) (Handler, Mode) {
	return HandlerFunc(func(ctx context.Context, req *Request) (any, error) {
		if f.relay {
			return f.out.Relay(ctx, req, f.timeout, func(res json.RawMessage, err error) (json.RawMessage, error) { return res, err })
		}
		res, err := f.out.Forward(ctx, req, f.timeout)
		if err != nil || req.IsNotification() {
			return nil, err
		}
		return res, nil
	}), Concurrent
}

// provider serves what the forwarded calls reach. Its handlers report on
// the channels.
type provider struct {
	*Mux
	ids     chan string   // "whoami": the id the provider saw
	notes   chan string   // "note": the params of each notification
	started chan struct{} // "wait": the handler has begun
	ended   chan error    // "wait": the cause of its context's end
	release chan struct{} // "hold": closed by free to let it return
	free    func()
}

func newProvider() *provider {
	p := &provider{
		Mux:     specMux(),
		ids:     make(chan string, 1),
		notes:   make(chan string, 1),
		started: make(chan struct{}, 100),
		ended:   make(chan error, 1),
		release: make(chan struct{}),
	}
	var once sync.Once
	p.free = func() { once.Do(func() { close(p.release) }) }
	p.HandleFunc("whoami", func(ctx context.Context, req *Request) (any, error) {
		p.ids <- req.ID.String()
		return "ok", nil
	})
	p.HandleFunc("note", func(ctx context.Context, req *Request) (any, error) {
		p.notes <- string(req.Params)
		return nil, nil
	})
	p.HandleFunc("count", func(ctx context.Context, _ *Request) (any, error) {
		for i := 1; i <= 3; i++ {
			if err := Progress(ctx, map[string]int{"step": i}); err != nil {
				return nil, err
			}
		}
		return "counted", nil
	})
	p.HandleFunc("wait", func(ctx context.Context, _ *Request) (any, error) {
		p.started <- struct{}{}
		<-ctx.Done()
		p.ended <- context.Cause(ctx)
		return nil, &Error{Code: CodeCancelled, Message: "cancelled at the provider", Data: json.RawMessage(`"bye"`)}
	})
	p.HandleFunc("hold", func(ctx context.Context, _ *Request) (any, error) {
		p.started <- struct{}{}
		<-p.release
		return "released", nil
	})
	return p
}

// relay is a caller, a middle peer that forwards what the caller sends
// to a provider, and the provider: a hub and two of its peers, in
// miniature. The caller speaks raw JSON.
type relay struct {
	caller *rawPeer
	out    *Conn // the middle's connection to the provider
	prov   *provider
	pc     *Conn // the provider's end
}

func newRelay(t *testing.T, useRelay bool, timeout time.Duration) *relay {
	t.Helper()
	prov := newProvider()
	out, pc := pipe(t, nil, &Options{Router: prov})
	t.Cleanup(prov.free) // before the pipe's cleanup waits for "hold"
	caller := newRawPeer(t, &Options{Router: forwarder{out, timeout, useRelay}})
	return &relay{caller: caller, out: out, prov: prov, pc: pc}
}

// The caller gets the provider's result or error unchanged, under its own
// id, byte for byte; the provider sees an id of the middle's choosing.
func TestForwardPassesAnswersThrough(t *testing.T) { bothWays(t, testForwardPassesAnswersThrough) }

func testForwardPassesAnswersThrough(t *testing.T, relay bool) {
	r := newRelay(t, relay, time.Minute)
	tests := []struct{ in, want string }{
		{`{"jsonrpc":"2.0","method":"echo","params":{"x":[1,2.50]},"id":123456789012345678901234567890}`,
			`{"jsonrpc":"2.0","id":123456789012345678901234567890,"result":{"x":[1,2.50]}}`},
		{`{"jsonrpc":"2.0","method":"custom","id":"c"}`,
			`{"jsonrpc":"2.0","id":"c","error":{"code":42,"message":"custom","data":{"x":1}}}`},
		{`{"jsonrpc":"2.0","method":"fail","id":-1.5e3}`,
			`{"jsonrpc":"2.0","id":-1.5e3,"error":{"code":-32000,"message":"it failed"}}`},
		{`{"jsonrpc":"2.0","method":"nope","id":null}`,
			`{"jsonrpc":"2.0","id":null,"error":{"code":-32601,"message":"Method not found"}}`},
		{`{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":7}`,
			`{"jsonrpc":"2.0","id":7,"result":19}`},
	}
	for _, tt := range tests {
		if got := r.caller.roundTrip(tt.in); got != tt.want {
			t.Errorf("%s\n got %s\nwant %s", tt.in, got, tt.want)
		}
	}
	got := r.caller.roundTrip(`{"jsonrpc":"2.0","method":"whoami","id":"caller's id"}`)
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","id":"caller's id","result":"ok"}`, got)
	if id := recv(t, r.prov.ids); id == `"caller's id"` || id == "" {
		t.Errorf("the provider saw id %s, want one of the middle's", id)
	}
}

func TestForwardNotification(t *testing.T) { bothWays(t, testForwardNotification) }

func testForwardNotification(t *testing.T, relay bool) {
	r := newRelay(t, relay, time.Minute)
	if got := r.caller.roundTrip(`{"jsonrpc":"2.0","method":"note","params":["hi"]}`); got != "" {
		t.Fatalf("a notification got %s", got)
	}
	if got := recv(t, r.prov.notes); got != `["hi"]` {
		t.Fatalf("provider got %s", got)
	}
}

// rpc.progress from the provider reaches the caller under the caller's
// id, before the answer.
func TestForwardProgress(t *testing.T) { bothWays(t, testForwardProgress) }

func testForwardProgress(t *testing.T, relay bool) {
	r := newRelay(t, relay, time.Minute)
	r.caller.write(`{"jsonrpc":"2.0","method":"count","id":"p-1"}`)
	for i := 1; i <= 3; i++ {
		want := fmt.Sprintf(`{"jsonrpc":"2.0","method":"rpc.progress","params":{"id":"p-1","data":{"step":%d}}}`, i)
		if got := r.caller.read(); got != want {
			t.Fatalf("got %s\nwant %s", got, want)
		}
	}
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","id":"p-1","result":"counted"}`, r.caller.read())
}

// rpc.cancel from the caller reaches the provider, and the answer is the
// provider's.
func TestForwardCancel(t *testing.T) { bothWays(t, testForwardCancel) }

func testForwardCancel(t *testing.T, relay bool) {
	r := newRelay(t, relay, time.Minute)
	r.caller.write(`{"jsonrpc":"2.0","method":"wait","id":"w"}`)
	recv(t, r.prov.started)
	r.caller.write(`{"jsonrpc":"2.0","method":"rpc.cancel","params":{"id":"w"}}`)
	if err := recv(t, r.prov.ended); !errors.Is(err, errCancelled) {
		t.Fatalf("provider's handler ended by %v, want rpc.cancel", err)
	}
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","id":"w","error":{"code":-32002,"message":"cancelled at the provider","data":"bye"}}`,
		r.caller.read())
}

// Past the timeout the caller gets -32003 and the provider rpc.cancel.
func TestForwardTimeout(t *testing.T) { bothWays(t, testForwardTimeout) }

func testForwardTimeout(t *testing.T, relay bool) {
	r := newRelay(t, relay, 50*time.Millisecond)
	r.caller.write(`{"jsonrpc":"2.0","method":"wait","id":1}`)
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","id":1,"error":{"code":-32003,"message":"Request timed out"}}`, r.caller.read())
	if err := recv(t, r.prov.ended); !errors.Is(err, errCancelled) {
		t.Fatalf("provider's handler ended by %v, want rpc.cancel", err)
	}
}

// A call whose provider goes away fails with ErrClosed, at once.
func TestForwardProviderLost(t *testing.T) { bothWays(t, testForwardProviderLost) }

func testForwardProviderLost(t *testing.T, relay bool) {
	r := newRelay(t, relay, time.Minute)
	errc := make(chan error, 1)
	go func() {
		_, err := r.out.Forward(t.Context(), &Request{ID: ID{"1"}, Method: "hold"}, 0)
		errc <- err
	}()
	recv(t, r.prov.started)
	r.pc.Close()
	if err := recv(t, errc); !errors.Is(err, ErrClosed) {
		t.Fatalf("got %v, want ErrClosed", err)
	}
	if _, err := r.out.Forward(t.Context(), &Request{ID: ID{"2"}, Method: "echo"}, 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("after the close: %v, want ErrClosed", err)
	}
}

// A caller that leaves cancels its forwarded calls at the provider.
func TestForwardCallerLeaves(t *testing.T) { bothWays(t, testForwardCallerLeaves) }

func testForwardCallerLeaves(t *testing.T, relay bool) {
	prov := newProvider()
	out, _ := pipe(t, nil, &Options{Router: prov})
	caller, _ := pipe(t, nil, &Options{Router: forwarder{out, time.Minute, relay}})
	errc := make(chan error, 1)
	go func() { errc <- caller.Call(context.Background(), "wait", nil, nil) }()
	recv(t, prov.started)
	caller.Close()
	if err := recv(t, errc); !errors.Is(err, ErrClosed) {
		t.Fatalf("the caller's call returned %v, want ErrClosed", err)
	}
	if err := recv(t, prov.ended); !errors.Is(err, errCancelled) {
		t.Fatalf("provider's handler ended by %v, want rpc.cancel", err)
	}
}

// Without a connection to answer on, a cancelled Forward returns at once,
// after telling the provider.
func TestForwardCancelWithoutCaller(t *testing.T) { bothWays(t, testForwardCancelWithoutCaller) }

func testForwardCancelWithoutCaller(t *testing.T, relay bool) {
	r := newRelay(t, relay, time.Minute)
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := r.out.Forward(ctx, &Request{ID: ID{"1"}, Method: "wait"}, 0)
		errc <- err
	}()
	recv(t, r.prov.started)
	cancel()
	if err := recv(t, errc); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if err := recv(t, r.prov.ended); !errors.Is(err, errCancelled) {
		t.Fatalf("provider's handler ended by %v, want rpc.cancel", err)
	}
}

// Shutdown keeps the connection open for the forwarded calls sent, and
// sends no more.
func TestForwardShutdown(t *testing.T) { bothWays(t, testForwardShutdown) }

func testForwardShutdown(t *testing.T, relay bool) {
	r := newRelay(t, relay, time.Minute)
	r.caller.write(`{"jsonrpc":"2.0","method":"hold","id":1}`)
	recv(t, r.prov.started)
	done := make(chan error, 1)
	go func() { done <- r.out.Shutdown(t.Context()) }()
	testkit.WaitFor(t, "draining", func() bool {
		r.out.mu.Lock()
		defer r.out.mu.Unlock()
		return r.out.draining
	})
	r.caller.write(`{"jsonrpc":"2.0","method":"echo","params":[1],"id":2}`)
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","id":2,"error":{"code":-32005,"message":"Shutting down"}}`, r.caller.read())
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned %v with a forwarded call in flight", err)
	default:
	}
	r.prov.free()
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","id":1,"result":"released"}`, r.caller.read())
	if err := recv(t, done); err != nil {
		t.Fatal(err)
	}
}

// Once the answers are back, nothing of 10,000 forwarded calls remains:
// no pending entry, no in-flight entry, no goroutine beyond the parked
// workers and, on a connection whose reading moved off Serve's goroutine
// (a forwarding handler hands the reading on), that goroutine.
func TestForwardLeavesNothing(t *testing.T) { bothWays(t, testForwardLeavesNothing) }

func testForwardLeavesNothing(t *testing.T, relay bool) {
	prov := newProvider()
	out, pc := pipe(t, nil, &Options{Router: prov})
	caller, mid := pipe(t, nil, &Options{Router: forwarder{out, time.Minute, relay}})
	conns := []*Conn{out, pc, caller, mid}
	goroutines := func() int {
		n := 0
		for _, c := range conns {
			n -= int(c.pool.count.Load())
			if c.role.away.Load() {
				n-- // Serve's goroutine, waiting since the reading moved
			}
		}
		return n + runtime.NumGoroutine()
	}
	before := goroutines()

	const calls, workers = 10000, 8
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < calls; i += workers {
				var got []int
				if err := caller.Call(t.Context(), "echo", []int{i}, &got); err != nil || len(got) != 1 || got[0] != i {
					t.Errorf("call %d: %v, %v", i, got, err)
					return
				}
			}
		})
	}
	wg.Wait()

	// A handler releases its slot just after its reply is queued: the
	// last ones may still be finishing.
	for _, c := range conns {
		testkit.WaitFor(t, "no state left", func() bool {
			c.mu.Lock()
			defer c.mu.Unlock()
			return len(c.pending)+len(c.inflight)+c.running+c.forwards == 0
		})
	}
	testkit.WaitFor(t, "no goroutine left but parked workers", func() bool { return goroutines() <= before })
}

// recv returns the next value from ch, failing the test after testkit.Wait.
func recv[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(testkit.Wait):
		t.Fatal("timed out waiting on a channel")
		panic("unreachable")
	}
}

// bothWays runs a test of forwarding with Forward, then with Relay.
func bothWays(t *testing.T, test func(t *testing.T, relay bool)) {
	t.Run("Forward", func(t *testing.T) { test(t, false) })
	t.Run("Relay", func(t *testing.T) { test(t, true) })
}

// A caller that does not read its answers holds up no one else's: the
// provider's connection goes on serving the other callers.
func TestForwardCallerNotReading(t *testing.T) { bothWays(t, testForwardCallerNotReading) }

func testForwardCallerNotReading(t *testing.T, relay bool) {
	r := newRelay(t, relay, time.Minute)
	other := newRawPeer(t, &Options{Router: forwarder{r.out, time.Minute, relay}})
	// The caller's transport is full (16 messages) once these are
	// written, and its queue empty: the next write to it waits.
	in := r.caller.raw.(*pipeEnd).in
	for i := range cap(in) {
		r.caller.write(fmt.Sprintf(`{"jsonrpc":"2.0","method":"rpc.ping","id":%d}`, i))
	}
	deadline := time.Now().Add(testkit.Wait)
	for len(in) < cap(in) || !r.caller.c.out.idle() {
		if time.Now().After(deadline) {
			t.Fatalf("the caller's transport holds %d of %d pongs", len(in), cap(in))
		}
		runtime.Gosched()
	}
	r.caller.write(`{"jsonrpc":"2.0","method":"echo","params":["stuck"],"id":"stuck"}`)
	for r.caller.c.out.idle() { // until the answer is being written
		if time.Now().After(deadline) {
			t.Fatal("the answer to the caller is not being written")
		}
		runtime.Gosched()
	}
	got := other.roundTrip(`{"jsonrpc":"2.0","method":"echo","params":["free"],"id":"free"}`)
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","id":"free","result":["free"]}`, got)
	for range cap(in) {
		r.caller.read()
	}
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","id":"stuck","result":["stuck"]}`, r.caller.read())
}
