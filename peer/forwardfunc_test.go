package peer

import (
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"testing"
	"time"
)

// outcome is what ForwardFunc's done got.
type outcome struct {
	res string
	err error
}

func forwardFunc(ctx context.Context, c *Conn, req *Request, timeout time.Duration) <-chan outcome {
	ch := make(chan outcome, 1)
	c.ForwardFunc(ctx, req, timeout, func(res json.RawMessage, err error) { ch <- outcome{string(res), err} })
	return ch
}

func request(id, method, params string) *Request {
	req := &Request{Method: method}
	if params != "" {
		req.Params = json.RawMessage(params)
	}
	if id != "" {
		_ = req.ID.UnmarshalJSON([]byte(id))
	}
	return req
}

// ForwardFunc's done gets what Forward returns: the result or the error,
// unchanged; the timeout's end, with rpc.cancel to the other side; the
// caller's ctx's end, at once; the connection's close.
func TestForwardFunc(t *testing.T) {
	prov := newProvider()
	out, _ := pipe(t, nil, &Options{Router: prov})
	t.Cleanup(prov.free)

	if o := recv(t, forwardFunc(t.Context(), out, request("1", "subtract", "[42,23]"), time.Minute)); o.res != "19" || o.err != nil {
		t.Fatalf("subtract: %+v", o)
	}
	o := recv(t, forwardFunc(t.Context(), out, request("1", "custom", ""), time.Minute))
	if e, ok := errors.AsType[*Error](o.err); !ok || e.Code != 42 || string(e.Data) != `{"x":1}` {
		t.Fatalf("custom: %+v, want its error unchanged", o)
	}

	done := forwardFunc(t.Context(), out, request("1", "wait", ""), 50*time.Millisecond)
	recv(t, prov.started)
	if o := recv(t, done); !errors.Is(o.err, context.DeadlineExceeded) {
		t.Fatalf("wait past the timeout: %+v", o)
	}
	if err := recv(t, prov.ended); !errors.Is(err, errCancelled) {
		t.Fatalf("the provider's context ended with %v, want rpc.cancel", err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	done = forwardFunc(ctx, out, request("1", "wait", ""), time.Minute)
	recv(t, prov.started)
	cancel()
	if o := recv(t, done); !errors.Is(o.err, context.Canceled) {
		t.Fatalf("wait, caller cancelled: %+v", o)
	}
	if err := recv(t, prov.ended); !errors.Is(err, errCancelled) {
		t.Fatalf("the provider's context ended with %v, want rpc.cancel", err)
	}

	if o := recv(t, forwardFunc(t.Context(), out, request("", "note", `["hi"]`), time.Minute)); o.err != nil || o.res != "" {
		t.Fatalf("a notification: %+v", o)
	}
	if got := recv(t, prov.notes); got != `["hi"]` {
		t.Fatalf("the provider got %s", got)
	}

	done = forwardFunc(t.Context(), out, request("1", "hold", ""), time.Minute)
	recv(t, prov.started)
	out.Close()
	if o := recv(t, done); !errors.Is(o.err, ErrClosed) {
		t.Fatalf("hold, connection closed: %+v", o)
	}
	if o := recv(t, forwardFunc(t.Context(), out, request("1", "subtract", "[1,1]"), time.Minute)); !errors.Is(o.err, ErrClosed) {
		t.Fatalf("after the close: %+v", o)
	}
}

// Calls of ForwardFunc waiting for their answers hold no goroutine each.
func TestForwardFuncNoGoroutinePerCall(t *testing.T) {
	prov := newProvider()
	out, _ := pipe(t, nil, &Options{Router: prov})
	t.Cleanup(prov.free)
	const calls = 50
	before := runtime.NumGoroutine()
	outcomes := make(chan outcome, calls)
	for range calls {
		out.ForwardFunc(t.Context(), request("1", "hold", ""), time.Minute, func(res json.RawMessage, err error) {
			outcomes <- outcome{string(res), err}
		})
	}
	for range calls {
		recv(t, prov.started)
	}
	// The provider's handlers hold a goroutine each; the caller's side
	// none: fewer than calls more goroutines in all would mean nothing,
	// so count the provider's out.
	if grown := runtime.NumGoroutine() - before; grown > calls+10 {
		t.Fatalf("%d goroutines more for %d calls waiting, with the provider's %d", grown, calls, calls)
	}
	prov.free()
	for range calls {
		if o := recv(t, outcomes); o.res != `"released"` || o.err != nil {
			t.Fatalf("hold: %+v", o)
		}
	}
}
