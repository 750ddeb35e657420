package peer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/internal/testkit"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func pipe(t *testing.T, aOpts, bOpts *Options) (a, b *Conn) {
	t.Helper()
	a, b = Pipe(aOpts, bOpts)
	t.Cleanup(func() {
		a.Close()
		<-a.Done()
		<-b.Done()
	})
	return a, b
}

func TestCallBothDirections(t *testing.T) {
	ma, mb := NewMux(), NewMux()
	ma.Handle("whoami", Func(func(context.Context, struct{}) (string, error) { return "a", nil }))
	mb.Handle("whoami", Func(func(context.Context, struct{}) (string, error) { return "b", nil }))
	a, b := pipe(t, &Options{Router: ma}, &Options{Router: mb})
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			var s string
			if err := a.Call(t.Context(), "whoami", nil, &s); err != nil || s != "b" {
				t.Errorf("a->b: %q %v", s, err)
			}
		})
		wg.Go(func() {
			var s string
			if err := b.Call(t.Context(), "whoami", nil, &s); err != nil || s != "a" {
				t.Errorf("b->a: %q %v", s, err)
			}
		})
	}
	wg.Wait()
}

func TestSlowHandlerDoesNotBlockOthers(t *testing.T) {
	release := make(chan struct{})
	m := specMux()
	m.HandleFunc("block", func(ctx context.Context, _ *Request) (any, error) {
		<-release
		return "done", nil
	})
	a, _ := pipe(t, nil, &Options{Router: m})
	slow := make(chan error, 1)
	go func() { slow <- a.Call(context.Background(), "block", nil, nil) }()
	// Many fast calls complete while the slow one is still running.
	for i := range 20 {
		var sum float64
		if err := a.Call(t.Context(), "add", []int{i, 1}, &sum); err != nil || sum != float64(i+1) {
			t.Fatalf("add: %v %v", sum, err)
		}
	}
	select {
	case err := <-slow:
		t.Fatalf("slow call returned early: %v", err)
	default:
	}
	close(release)
	if err := <-slow; err != nil {
		t.Fatal(err)
	}
}

// A handler that calls back to its caller and waits must not deadlock:
// the caller's reader matches the nested call's response while the outer
// call is still pending.
// callbackMuxes returns a client serving "greet" and a server serving
// "callback", which calls its caller's greet and returns the greeting.
func callbackMuxes() (client, server *Mux) {
	client = NewMux()
	client.Handle("greet", Func(func(_ context.Context, p []string) (string, error) {
		return "hello " + p[0], nil
	}))
	server = NewMux()
	server.HandleFunc("callback", func(ctx context.Context, _ *Request) (any, error) {
		var s string
		err := ConnFromContext(ctx).Call(ctx, "greet", []string{"world"}, &s)
		return s, err
	})
	return client, server
}

func TestCallbackToCaller(t *testing.T) {
	client, server := callbackMuxes()
	a, _ := pipe(t, &Options{Router: client}, &Options{Router: server})
	var got string
	if err := a.Call(t.Context(), "callback", nil, &got); err != nil || got != "hello world" {
		t.Fatalf("got %q, %v", got, err)
	}
	// The nested call's error comes back unchanged.
	server.HandleFunc("callback_missing", func(ctx context.Context, req *Request) (any, error) {
		return nil, ConnFromContext(ctx).Call(ctx, "missing", nil, nil)
	})
	var e *Error
	if err := a.Call(t.Context(), "callback_missing", nil, nil); !errors.As(err, &e) || e.Code != CodeMethodNotFound {
		t.Fatalf("got %v, want -32601", err)
	}
}

// waitMux serves "wait", which returns when its context ends; started is
// closed once it has begun. It serves one call.
func waitMux() (m *Mux, started <-chan struct{}) {
	ch := make(chan struct{})
	m = NewMux()
	m.HandleFunc("wait", func(ctx context.Context, _ *Request) (any, error) {
		close(ch)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	return m, ch
}

func TestCancel(t *testing.T) {
	started := make(chan struct{})
	cause := make(chan error, 1)
	m := NewMux()
	m.HandleFunc("wait", func(ctx context.Context, _ *Request) (any, error) {
		close(started)
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return nil, ctx.Err()
	})
	a, _ := pipe(t, nil, &Options{Router: m})
	cancelWait(t, a, started)
	// The callee saw rpc.cancel, not a closed connection.
	if err := <-cause; !errors.Is(err, errCancelled) {
		t.Fatalf("handler context ended by %v, want rpc.cancel", err)
	}
	// The connection is still usable.
	if err := a.Call(t.Context(), "rpc.ping", nil, nil); err != nil {
		t.Fatal(err)
	}
}

// cancelWait calls "wait" on a, cancels the call once started is closed,
// and checks that Call returns context.Canceled.
func cancelWait(t *testing.T, a *Conn, started <-chan struct{}) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- a.Call(ctx, "wait", nil, nil) }()
	<-started
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Call returned %v, want context.Canceled", err)
	}
}

func TestCancelAnswersCancelled(t *testing.T) {
	m, started := waitMux()
	p := newRawPeer(t, &Options{Router: m})
	p.write(`{"jsonrpc":"2.0","method":"wait","id":"w1"}`)
	<-started
	p.write(`{"jsonrpc":"2.0","method":"rpc.cancel","params":{"id":"w1"}}`)
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","error":{"code":-32002,"message":"Request cancelled"},"id":"w1"}`, p.read())
}

func TestCallTimeout(t *testing.T) {
	m := NewMux()
	m.HandleFunc("wait", func(ctx context.Context, _ *Request) (any, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	a, _ := pipe(t, &Options{CallTimeout: 20 * time.Millisecond}, &Options{Router: m})
	if err := a.Call(context.Background(), "wait", nil, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want DeadlineExceeded", err)
	}
}

func TestProgress(t *testing.T) {
	m := NewMux()
	m.HandleFunc("count", func(ctx context.Context, _ *Request) (any, error) {
		for i := 1; i <= 5; i++ {
			if err := Progress(ctx, i); err != nil {
				return nil, err
			}
		}
		return "done", nil
	})
	a, _ := pipe(t, nil, &Options{Router: m})
	var got []string
	ctx := WithProgress(t.Context(), func(data json.RawMessage) { got = append(got, string(data)) })
	var res string
	if err := a.Call(ctx, "count", nil, &res); err != nil {
		t.Fatal(err)
	}
	// Progress arrives before the result, in order.
	if strings.Join(got, ",") != "1,2,3,4,5" || res != "done" {
		t.Fatalf("progress %v, result %q", got, res)
	}
	// Over a connection-less Respond, Progress is a no-op.
	out := Respond(t.Context(), []byte(`{"jsonrpc":"2.0","method":"count","id":1}`), &Options{Router: m})
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","result":"done","id":1}`, string(out))
}

func TestCloseFailsPending(t *testing.T) {
	m, started := waitMux()
	a, b := pipe(t, nil, &Options{Router: m})
	errc := make(chan error, 1)
	go func() { errc <- a.Call(context.Background(), "wait", nil, nil) }()
	<-started
	b.CloseWith(CloseGoingAway, "bye")
	err := <-errc
	var ce *CloseError
	if !errors.Is(err, ErrClosed) || !errors.As(err, &ce) || ce.Code != CloseGoingAway {
		t.Fatalf("got %v, want ErrClosed with close code 1001", err)
	}
	// Later calls fail at once.
	if err := a.Call(context.Background(), "wait", nil, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("after close: %v", err)
	}
	<-a.Done()
	if !errors.Is(a.Err(), ErrClosed) {
		t.Fatalf("Err() = %v", a.Err())
	}
}

func TestMaxInFlight(t *testing.T) {
	release := make(chan struct{})
	var started sync.WaitGroup
	started.Add(2)
	m := NewMux()
	m.HandleFunc("block", func(ctx context.Context, _ *Request) (any, error) {
		started.Done()
		<-release
		return 1, nil
	})
	a, srv := pipe(t, nil, &Options{Router: m, MaxInFlight: 2})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free) // before the pipe's: a failure must not leave handlers blocked
	errs := make(chan error, 3)
	for range 2 {
		go func() { errs <- a.Call(context.Background(), "block", nil, nil) }()
	}
	started.Wait()
	// System methods need no slot.
	if err := a.Call(t.Context(), "rpc.ping", nil, nil); err != nil {
		t.Fatalf("ping while full: %v", err)
	}
	// A third call is not refused: the reader waits for a slot, and reads
	// nothing meanwhile.
	started.Add(1)
	go func() { errs <- a.Call(context.Background(), "block", nil, nil) }()
	testkit.WaitFor(t, "the reader to wait for a slot", srv.paused.Load)
	free()
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

func TestMessageTooBig(t *testing.T) {
	p := newRawPeer(t, &Options{Router: specMux(), MaxMessage: 64})
	p.write(`{"jsonrpc":"2.0","method":"echo","params":["` + strings.Repeat("x", 100) + `"],"id":1}`)
	_, err := p.raw.Read(t.Context())
	var ce *CloseError
	if !errors.As(err, &ce) || ce.Code != CloseTooBig {
		t.Fatalf("got %v, want close 1009", err)
	}
}

func TestPanicIsLoggedAndServingGoesOn(t *testing.T) {
	core, logs := observer.New(zap.ErrorLevel)
	a, _ := pipe(t, nil, &Options{Router: specMux(), Logger: zap.New(core)})
	var e *Error
	if err := a.Call(t.Context(), "panic", nil, nil); !errors.As(err, &e) || e.Code != CodeInternalError {
		t.Fatalf("got %v, want -32603", err)
	}
	if n := logs.FilterMessage("handler panicked").Len(); n != 1 {
		t.Fatalf("panic logged %d times", n)
	}
	var sum float64
	if err := a.Call(t.Context(), "add", []int{1, 2}, &sum); err != nil || sum != 3 {
		t.Fatalf("after panic: %v %v", sum, err)
	}
}

func TestSerial(t *testing.T) {
	var mu sync.Mutex
	var order []int
	var running, maxRunning atomic.Int32
	m := NewMux()
	m.Handle("append", Func(func(_ context.Context, p []int) (int, error) {
		if n := running.Add(1); n > maxRunning.Load() {
			maxRunning.Store(n)
		}
		defer running.Add(-1)
		mu.Lock()
		order = append(order, p[0])
		mu.Unlock()
		return p[0], nil
	}), Serial)
	p := newRawPeer(t, &Options{Router: m})
	const n = 200
	for i := range n {
		p.write(fmt.Sprintf(`{"jsonrpc":"2.0","method":"append","params":[%d]}`, i))
	}
	p.roundTrip(`{"jsonrpc":"2.0","method":"append","params":[200]}`)
	if len(order) != n+1 || maxRunning.Load() != 1 {
		t.Fatalf("ran %d calls, at most %d at once", len(order), maxRunning.Load())
	}
	for i, v := range order {
		if v != i {
			t.Fatalf("order[%d] = %d", i, v)
		}
	}
}

func TestClientBatch(t *testing.T) {
	a, _ := pipe(t, nil, &Options{Router: specMux()})
	var sum, diff float64
	var data []any
	batch := []BatchElem{
		{Method: "sum", Params: []int{1, 2, 4}, Result: &sum},
		{Method: "notify_hello", Params: []int{7}, Notify: true},
		{Method: "subtract", Params: []int{42, 23}, Result: &diff},
		{Method: "foo.get", Params: map[string]string{"name": "myself"}},
		{Method: "get_data", Result: &data},
	}
	if err := a.Batch(t.Context(), batch); err != nil {
		t.Fatal(err)
	}
	if sum != 7 || diff != 19 || len(data) != 2 || data[0] != "hello" {
		t.Fatalf("results: %v %v %v", sum, diff, data)
	}
	var e *Error
	if !errors.As(batch[3].Err, &e) || e.Code != CodeMethodNotFound {
		t.Fatalf("foo.get: %v", batch[3].Err)
	}
	for _, i := range []int{0, 1, 2, 4} {
		if batch[i].Err != nil {
			t.Fatalf("element %d: %v", i, batch[i].Err)
		}
	}
	// Only notifications: returns at once, no reply expected.
	if err := a.Batch(t.Context(), []BatchElem{{Method: "update", Notify: true}}); err != nil {
		t.Fatal(err)
	}
}

func TestParamsMustBeStructured(t *testing.T) {
	a, _ := pipe(t, nil, &Options{Router: specMux()})
	var e *Error
	if err := a.Call(t.Context(), "echo", "scalar", nil); !errors.As(err, &e) || e.Code != CodeInvalidParams {
		t.Fatalf("got %v", err)
	}
}

func TestPostTooSlow(t *testing.T) {
	// The raw side never reads: posted messages pile up and the peer is
	// closed with 1008 instead of blocking the poster.
	p := newRawPeer(t, &Options{MaxQueue: 4})
	var err error
	for i := 0; i < 100 && err == nil; i++ {
		err = p.c.Post([]byte(`{"jsonrpc":"2.0","method":"rpc.event","params":{"topic":"t","data":1}}`))
	}
	if !errors.Is(err, ErrTooSlow) {
		t.Fatalf("Post: %v, want ErrTooSlow", err)
	}
	<-p.c.Done()
	var ce *CloseError
	_, rerr := drain(p.raw)
	if !errors.As(rerr, &ce) || ce.Code != ClosePolicy {
		t.Fatalf("close: %v, want 1008", rerr)
	}
}

// drain reads until the transport fails and returns the count and error.
func drain(t Transport) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Wait)
	defer cancel()
	for n := 0; ; n++ {
		if _, err := t.Read(ctx); err != nil {
			return n, err
		}
	}
}

func TestShutdownDrains(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	m := NewMux()
	m.HandleFunc("work", func(ctx context.Context, _ *Request) (any, error) {
		close(started)
		<-release
		return "finished", nil
	})
	p := newRawPeer(t, &Options{Router: m})
	p.write(`{"jsonrpc":"2.0","method":"work","id":1}`)
	<-started
	done := make(chan error, 1)
	go func() { done <- p.c.Shutdown(context.Background()) }()
	// While draining, new calls are refused: the server is going away.
	p.waitForDraining()
	p.write(`{"jsonrpc":"2.0","method":"work","id":2}`)
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","error":{"code":-32005,"message":"Shutting down"},"id":2}`, p.read())
	close(release)
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","result":"finished","id":1}`, p.read())
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	_, err := p.raw.Read(t.Context())
	var ce *CloseError
	if !errors.As(err, &ce) || ce.Code != CloseGoingAway {
		t.Fatalf("got %v, want 1001", err)
	}
}

func (p *rawPeer) waitForDraining() {
	deadline := time.Now().Add(testkit.Wait)
	for {
		p.c.mu.Lock()
		d := p.c.draining
		p.c.mu.Unlock()
		if d {
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatal("not draining")
		}
		time.Sleep(50 * time.Microsecond)
	}
}

func TestServeContextCancelGoesAway(t *testing.T) {
	ta, tb := NewPipeTransport()
	c := NewConn(ta, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Serve(ctx) }()
	cancel()
	<-done
	_, err := drain(tb)
	var ce *CloseError
	if !errors.As(err, &ce) || ce.Code != CloseGoingAway {
		t.Fatalf("got %v, want 1001", err)
	}
}

func TestOnServe(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]Code{}
	opts := &Options{Router: specMux(), OnServe: func(method string, code Code, _ time.Duration) {
		mu.Lock()
		seen[method] = code
		mu.Unlock()
	}}
	Respond(t.Context(), []byte(`[{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1},{"jsonrpc":"2.0","method":"fail","id":2},{"jsonrpc":"2.0","method":"nope","id":3}]`), opts)
	want := map[string]Code{"add": 0, "fail": CodeApplication, "": CodeMethodNotFound}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", seen, want)
	}
}

// TestOnServeDuration checks the time OnServe is given: a handler's own,
// from its start to its reply, also for a call that comes after a slow one
// in a batch on the same goroutine (BatchWorkers 1).
func TestOnServeDuration(t *testing.T) {
	const slow = 200 * time.Millisecond
	mux := NewMux()
	mux.Handle("slow", HandlerFunc(func(context.Context, *Request) (any, error) {
		time.Sleep(slow)
		return 1, nil
	}))
	mux.Handle("quick", HandlerFunc(func(context.Context, *Request) (any, error) { return 2, nil }))
	var mu sync.Mutex
	took := map[string][]time.Duration{}
	opts := &Options{Router: mux, BatchWorkers: 1, OnServe: func(method string, _ Code, d time.Duration) {
		mu.Lock()
		took[method] = append(took[method], d)
		mu.Unlock()
	}}
	Respond(t.Context(), []byte(`{"jsonrpc":"2.0","method":"slow","id":1}`), opts)
	Respond(t.Context(), []byte(`[{"jsonrpc":"2.0","method":"slow","id":1},{"jsonrpc":"2.0","method":"quick","id":2}]`), opts)
	mu.Lock()
	defer mu.Unlock()
	if len(took["slow"]) != 2 || len(took["quick"]) != 1 {
		t.Fatalf("OnServe saw %v, want slow twice and quick once", took)
	}
	for _, d := range took["slow"] {
		if d < slow {
			t.Errorf("slow took %v by OnServe, want at least %v", d, slow)
		}
	}
	if d := took["quick"][0]; d <= 0 || d >= slow {
		t.Errorf("quick took %v by OnServe, want its own time, above 0 and below the slow call's %v", d, slow)
	}
}

func TestMuxPanics(t *testing.T) {
	h := HandlerFunc(func(context.Context, *Request) (any, error) { return nil, nil })
	for _, name := range []string{"", "rpc.subscribe", "rpc.anything"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Handle(%q) did not panic", name)
				}
			}()
			NewMux().Handle(name, h)
		}()
	}
	m := NewMux()
	m.Handle("x", h)
	defer func() {
		if recover() == nil {
			t.Error("duplicate Handle did not panic")
		}
	}()
	m.Handle("x", h)
}

func TestToError(t *testing.T) {
	tests := []struct {
		err  error
		code Code
		msg  string
	}{
		{errors.New("boom"), CodeApplication, "boom"},
		{context.Canceled, CodeCancelled, "Request cancelled"},
		{fmt.Errorf("wrapped: %w", context.DeadlineExceeded), CodeTimeout, "Request timed out"},
		{&Error{Code: 7, Message: "mine"}, 7, "mine"},
		{fmt.Errorf("ctx: %w", &Error{Code: CodeUnauthorized, Message: "no"}), CodeUnauthorized, "no"},
	}
	for _, tt := range tests {
		e := ToError(tt.err)
		if e.Code != tt.code || e.Message != tt.msg {
			t.Errorf("ToError(%v) = %d %q, want %d %q", tt.err, e.Code, e.Message, tt.code, tt.msg)
		}
	}
	if !errors.Is(&Error{Code: CodeCancelled, Message: "x"}, &Error{Code: CodeCancelled}) {
		t.Error("errors.Is by code failed")
	}
}

func TestDiscover(t *testing.T) {
	a, _ := pipe(t, nil, &Options{Router: specMux()})
	var doc testkit.Discovery
	if err := a.Call(t.Context(), "rpc.discover", nil, &doc); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(doc.OpenRPC, "1.") {
		t.Fatalf("openrpc version %q", doc.OpenRPC)
	}
	found := false
	for _, m := range doc.Methods {
		if m.Name != "subtract" {
			continue
		}
		found = true
		if m.ParamStructure != "either" || len(m.Params) != 2 ||
			m.Params[0].Name != "minuend" || m.Params[0].Schema["type"] != "number" || !m.Params[0].Required ||
			m.Result.Schema["type"] != "number" {
			t.Fatalf("subtract described as %+v", m)
		}
	}
	if !found {
		t.Fatal("subtract missing from rpc.discover")
	}
}

func TestInline(t *testing.T) {
	release := make(chan struct{})
	var started sync.WaitGroup
	started.Add(1)
	var got []int
	m := NewMux()
	m.HandleFunc("block", func(ctx context.Context, _ *Request) (any, error) {
		started.Done()
		<-release
		return nil, nil
	})
	m.Handle("event", Func(func(_ context.Context, p []int) (any, error) {
		got = append(got, p[0]) // the reader runs these one at a time
		return nil, nil
	}), Inline)
	m.Handle("fast", Func(func(_ context.Context, p []int) (int, error) { return p[0] * 2, nil }), Inline)
	p := newRawPeer(t, &Options{Router: m, MaxInFlight: 1})
	// The only in-flight slot is taken...
	p.write(`{"jsonrpc":"2.0","method":"block","id":"b"}`)
	started.Wait()
	// ...yet inline notifications and calls are served, in order.
	for i := range 500 {
		p.write(fmt.Sprintf(`{"jsonrpc":"2.0","method":"event","params":[%d]}`, i))
	}
	p.write(`{"jsonrpc":"2.0","method":"fast","params":[21],"id":"f"}`)
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","result":42,"id":"f"}`, p.read())
	if len(got) != 500 {
		t.Fatalf("got %d events", len(got))
	}
	for i, v := range got {
		if v != i {
			t.Fatalf("event %d arrived as %d", i, v)
		}
	}
	close(release)
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","result":null,"id":"b"}`, p.read())
	// Inline methods are still described by rpc.discover.
	if d, ok := m.load()["fast"].h.(describer); !ok || d == nil {
		t.Fatal("inline Func lost its description")
	}
}

func TestClosingBeforeDone(t *testing.T) {
	started := make(chan struct{})
	release := make(chan struct{})
	m := NewMux()
	m.HandleFunc("stubborn", func(ctx context.Context, _ *Request) (any, error) {
		close(started)
		<-release // ignores its context
		return nil, nil
	})
	a, b := Pipe(nil, &Options{Router: m})
	go a.Call(context.Background(), "stubborn", nil, nil) //nolint:errcheck
	<-started
	a.Close()
	<-b.Closing() // b learns at once that the connection is going...
	select {
	case <-b.Done():
		t.Fatal("Done before the handler returned")
	default: // ...while Done waits for its handler.
	}
	close(release)
	<-b.Done()
	<-a.Done()
}

func TestServeResult(t *testing.T) {
	// Closed by this side: Serve returns nil.
	ta, tb := NewPipeTransport()
	c := NewConn(ta, nil)
	done := make(chan error, 1)
	go func() { done <- c.Serve(context.Background()) }()
	// A ping answered means Serve is running.
	tb.Write(t.Context(), []byte(`{"jsonrpc":"2.0","method":"rpc.ping","id":1}`))
	if _, err := tb.Read(t.Context()); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := <-done; err != nil {
		t.Fatalf("local close: Serve returned %v", err)
	}
	// Closed by the other side: Serve says how.
	ta, tb = NewPipeTransport()
	c = NewConn(ta, nil)
	go func() { done <- c.Serve(context.Background()) }()
	tb.Close(CloseGoingAway, "restart")
	err := <-done
	var ce *CloseError
	if !errors.As(err, &ce) || ce.Code != CloseGoingAway || ce.Reason != "restart" || !errors.Is(err, ErrClosed) {
		t.Fatalf("remote close: Serve returned %v", err)
	}
	modes := NewMux()
	modes.Handle("inline", HandlerFunc(nil), Inline)
	modes.Handle("plain", HandlerFunc(nil))
	if _, m := modes.Lookup("inline"); m != Inline {
		t.Fatal("Inline")
	}
	if _, m := modes.Lookup("plain"); m != Concurrent {
		t.Fatal("Inline")
	}
}

// Handlers that send faster than the other side reads wait for room in
// the bounded queue: nothing is dropped and each call's order holds.
func TestFullQueueWaitsWithoutLoss(t *testing.T) {
	m := NewMux()
	m.HandleFunc("chatty", func(ctx context.Context, _ *Request) (any, error) {
		for i := range 200 {
			if err := Progress(ctx, i); err != nil {
				return nil, err
			}
		}
		return "done", nil
	})
	p := newRawPeer(t, &Options{Router: m, MaxQueue: 2})
	const calls = 5
	for id := range calls {
		p.write(fmt.Sprintf(`{"jsonrpc":"2.0","method":"chatty","id":%d}`, id))
	}
	next := make([]int, calls) // next progress value expected per call
	done := 0
	for done < calls {
		var msg struct {
			ID     *int `json:"id"`
			Result string
			Params struct{ ID, Data int }
		}
		if err := json.Unmarshal([]byte(p.read()), &msg); err != nil {
			t.Fatal(err)
		}
		if msg.ID != nil { // the result comes after all its progress
			if msg.Result != "done" || next[*msg.ID] != 200 {
				t.Fatalf("call %d ended after %d progress messages", *msg.ID, next[*msg.ID])
			}
			done++
			continue
		}
		if msg.Params.Data != next[msg.Params.ID] {
			t.Fatalf("call %d: progress %d, want %d", msg.Params.ID, msg.Params.Data, next[msg.Params.ID])
		}
		next[msg.Params.ID]++
	}
}

// After a burst of concurrent calls, the workers that ran them end once
// idle: an idle connection keeps no goroutines beyond its reader.
func TestWorkersEndWhenIdle(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	var running atomic.Int32
	m := NewMux()
	m.HandleFunc("wait", func(ctx context.Context, _ *Request) (any, error) {
		running.Add(1)
		<-release
		return nil, nil
	})
	a, srv := pipe(t, nil, &Options{Router: m})
	t.Cleanup(free) // runs before pipe's: a failure must not leave the handlers blocked
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if err := a.Call(t.Context(), "wait", nil, nil); err != nil {
				t.Error(err)
			}
		})
	}
	// None of them holds up the others: the first one blocks the reader
	// until the watchdog starts another, the rest run on workers.
	testkit.WaitFor(t, "20 handlers running", func() bool { return running.Load() == 20 })
	free()
	wg.Wait()
	testkit.WaitFor(t, "the workers and the extra readers to end", func() bool {
		return srv.pool.count.Load() == 0 && srv.role.loops.Load() == 1
	})
}

// A notification whose handler fails has nobody to answer: the failure is
// logged at debug level, so that one refused for a missing param is not
// dropped unseen.
func TestFailedNotificationIsLogged(t *testing.T) {
	logged := make(chan zapcore.Entry, 1)
	debug, _ := observer.New(zap.DebugLevel)
	core := zapcore.RegisterHooks(debug, func(e zapcore.Entry) error {
		if e.Message == "notification failed" {
			logged <- e
		}
		return nil
	})
	p := newRawPeer(t, &Options{Router: specMux(), Logger: zap.New(core)})
	p.write(`{"jsonrpc":"2.0","method":"subtract","params":{"minuend":42}}`)
	select {
	case <-logged:
	case <-time.After(testkit.Wait):
		t.Fatal("no log line for a notification refused with -32602")
	}
}

func TestDescribeUnregisteredPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Describe of an unregistered method did not panic")
		}
	}()
	NewMux().Describe("nothing", Doc{Summary: "never"})
}
