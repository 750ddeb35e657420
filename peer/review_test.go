package peer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/switchboard-rpc/switchboard/internal/testkit"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// Regression tests for defects found in review.

// A serial call cancelled while waiting its turn is answered -32002 at
// once, does not run, and does not let the call behind it jump ahead.
func TestSerialCancelWhileWaiting(t *testing.T) {
	var running, most atomic.Int32
	release := make(chan struct{})
	firstIn := make(chan struct{})
	m := NewMux()
	m.Handle("step", Func(func(ctx context.Context, p []string) (string, error) {
		if n := running.Add(1); n > most.Load() {
			most.Store(n)
		}
		defer running.Add(-1)
		if p[0] == "A" {
			close(firstIn)
			<-release
		}
		return p[0], nil
	}), Serial)
	p := newRawPeer(t, &Options{Router: m})
	p.write(`{"jsonrpc":"2.0","method":"step","params":["A"],"id":"A"}`)
	<-firstIn
	p.write(`{"jsonrpc":"2.0","method":"step","params":["B"],"id":"B"}`)
	p.write(`{"jsonrpc":"2.0","method":"step","params":["C"],"id":"C"}`)
	p.write(`{"jsonrpc":"2.0","method":"rpc.cancel","params":{"id":"B"}}`)
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","error":{"code":-32002,"message":"Request cancelled"},"id":"B"}`, p.read())
	close(release)
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","result":"A","id":"A"}`, p.read())
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","result":"C","id":"C"}`, p.read())
	if most.Load() != 1 {
		t.Fatalf("%d serial calls ran at once", most.Load())
	}
}

// When a batch's context ends, replies that arrived keep their results and
// the calls still pending are cancelled at the other side.
func TestBatchContextEndKeepsArrivedReplies(t *testing.T) {
	var cancelled sync.WaitGroup
	cancelled.Add(2)
	fastDone := make(chan struct{})
	m := NewMux()
	m.HandleFunc("slow", func(ctx context.Context, _ *Request) (any, error) {
		<-ctx.Done()
		if errors.Is(context.Cause(ctx), errCancelled) {
			cancelled.Done()
		}
		return nil, ctx.Err()
	})
	m.HandleFunc("fast", func(context.Context, *Request) (any, error) {
		defer close(fastDone)
		return "quick", nil
	})
	a, _ := pipe(t, nil, &Options{Router: m})
	ctx, cancel := context.WithCancel(t.Context())
	var fast string
	batch := []BatchElem{{Method: "slow"}, {Method: "fast", Result: &fast}, {Method: "slow"}}
	go func() {
		<-fastDone
		cancel()
	}()
	err := a.Batch(ctx, batch)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Batch: %v", err)
	}
	// The fast reply may or may not have been read before ctx ended;
	// if it was, its result is kept.
	if batch[1].Err == nil && fast != "quick" {
		t.Fatalf("fast element: %q %v", fast, batch[1].Err)
	}
	if !errors.Is(batch[0].Err, context.Canceled) || !errors.Is(batch[2].Err, context.Canceled) {
		t.Fatalf("slow elements: %v, %v", batch[0].Err, batch[2].Err)
	}
	cancelled.Wait() // both slow handlers saw rpc.cancel
}

// A batch far over MaxBatch is refused without decoding it all.
func TestHugeBatchCostsLittle(t *testing.T) {
	body := []byte("[" + strings.Repeat("0,", 1<<19) + "0]") // 1 MiB, 524289 elements
	opts := &Options{MaxBatch: 1000}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	out := Respond(t.Context(), body, opts)
	runtime.ReadMemStats(&after)
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request"},"id":null}`, string(out))
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
		t.Fatalf("refusing the batch allocated %d MiB", alloc>>20)
	}
}

func TestInvalidUTF8IsAParseError(t *testing.T) {
	for _, in := range []string{
		"{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[\"\xff\xfe\"],\"id\":1}",
		"{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":{\"\xc3\":1},\"id\":1}",
	} {
		out := Respond(t.Context(), []byte(in), &Options{Router: specMux()})
		testkit.JSONEqual(t, `{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"},"id":null}`, string(out))
	}
}

func TestNilErrorPointerIsInternalError(t *testing.T) {
	m := NewMux()
	m.HandleFunc("buggy", func(context.Context, *Request) (any, error) {
		var e *Error // a nil *Error returned as a non-nil error
		return 1, e
	})
	a, _ := pipe(t, nil, &Options{Router: m})
	var e *Error
	if err := a.Call(t.Context(), "buggy", nil, nil); !errors.As(err, &e) || e.Code != CodeInternalError {
		t.Fatalf("got %v, want -32603", err)
	}
}

// Inline handlers run on the reader in batches too: no slot, in order.
func TestInlineInBatch(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{})
	var got []int
	m := NewMux()
	m.HandleFunc("block", func(context.Context, *Request) (any, error) {
		close(started)
		<-release
		return nil, nil
	})
	m.Handle("event", Func(func(_ context.Context, p []int) (any, error) {
		got = append(got, p[0])
		return nil, nil
	}), Inline)
	p := newRawPeer(t, &Options{Router: m, MaxInFlight: 1})
	p.write(`{"jsonrpc":"2.0","method":"block","id":"b"}`)
	<-started
	var sb strings.Builder
	sb.WriteString("[")
	for i := range 10 {
		if i > 0 {
			sb.WriteString(",")
		}
		fmt.Fprintf(&sb, `{"jsonrpc":"2.0","method":"event","params":[%d]}`, i)
	}
	sb.WriteString(`,{"jsonrpc":"2.0","method":"rpc.ping","id":"p"}]`)
	p.write(sb.String())
	testkit.JSONEqual(t, `[{"jsonrpc":"2.0","result":{},"id":"p"}]`, p.read())
	if fmt.Sprint(got) != "[0 1 2 3 4 5 6 7 8 9]" {
		t.Fatalf("inline batch elements ran as %v", got)
	}
	close(release)
	p.read()
}

// Two calls with the same id: the second one finishing must not make the
// first one uncancellable.
func TestDuplicateIDStaysCancellable(t *testing.T) {
	m, started := waitMux()
	m.HandleFunc("quick", func(context.Context, *Request) (any, error) { return 1, nil })
	p := newRawPeer(t, &Options{Router: m})
	p.write(`{"jsonrpc":"2.0","method":"wait","id":7}`)
	<-started
	p.write(`{"jsonrpc":"2.0","method":"quick","id":7}`)
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","result":1,"id":7}`, p.read())
	p.write(`{"jsonrpc":"2.0","method":"rpc.cancel","params":{"id":7}}`)
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","error":{"code":-32002,"message":"Request cancelled"},"id":7}`, p.read())
}

// System method names are matched after unescaping, like any method.
func TestEscapedSystemMethod(t *testing.T) {
	m, started := waitMux()
	p := newRawPeer(t, &Options{Router: m})
	p.write(`{"jsonrpc":"2.0","method":"wait","id":1}`)
	<-started
	p.write(`{"jsonrpc":"2.0","method":"rpc\u002ecancel","params":{"id":1}}`)
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","error":{"code":-32002,"message":"Request cancelled"},"id":1}`, p.read())
}

// A panicking progress callback is logged and does not kill the reader.
func TestProgressCallbackPanic(t *testing.T) {
	core, logs := observer.New(zap.ErrorLevel)
	m := NewMux()
	m.HandleFunc("report", func(ctx context.Context, _ *Request) (any, error) {
		return "ok", Progress(ctx, 1)
	})
	a, _ := pipe(t, &Options{Logger: zap.New(core)}, &Options{Router: m})
	ctx := WithProgress(t.Context(), func(json.RawMessage) { panic("callback bug") })
	var s string
	if err := a.Call(ctx, "report", nil, &s); err != nil || s != "ok" {
		t.Fatalf("%q %v", s, err)
	}
	if logs.FilterMessage("progress callback panicked").Len() != 1 {
		t.Fatal("panic not logged")
	}
}

// heldTransport holds the first write that contains hold until release
// is closed, and says so on held.
type heldTransport struct {
	Transport
	hold    string
	held    chan struct{}
	release chan struct{}
	tripped atomic.Bool
}

func (h *heldTransport) Write(ctx context.Context, msg []byte) error {
	if strings.Contains(string(msg), h.hold) && h.tripped.CompareAndSwap(false, true) {
		close(h.held)
		<-h.release
	}
	return h.Transport.Write(ctx, msg)
}

// An id is free for the other side to use again once the reply to its
// call can reach it: rpc.cancel then cancels the new call with that id,
// not the old one, even while the old reply is still being written.
func TestReusedIDCancelsNewCall(t *testing.T) {
	derived := make(chan error, 1)
	m := NewMux()
	m.Handle("first", Func(func(context.Context, struct{}) (string, error) { return "first", nil }), Serial)
	m.HandleFunc("wait", func(ctx context.Context, _ *Request) (any, error) {
		<-ctx.Done()
		derived <- context.Cause(ctx)
		return nil, ctx.Err()
	})
	ta, tb := NewPipeTransport()
	ht := &heldTransport{Transport: ta, hold: `"first"`, held: make(chan struct{}), release: make(chan struct{})}
	srv := NewConn(ht, &Options{Router: m})
	go srv.Serve(context.Background()) //nolint:errcheck
	t.Cleanup(func() { srv.Close(); <-srv.Done() })
	var release sync.Once
	t.Cleanup(func() { release.Do(func() { close(ht.release) }) }) // before srv's
	p := &rawPeer{t: t, c: srv, raw: tb}

	p.write(`{"jsonrpc":"2.0","method":"first","id":4}`)
	recv(t, ht.held) // the reply to id 4 is on its way out
	p.write(`{"jsonrpc":"2.0","method":"wait","id":4}`)
	p.write(`{"jsonrpc":"2.0","method":"rpc.cancel","params":{"id":4}}`)
	if err := recv(t, derived); !errors.Is(err, errCancelled) {
		t.Fatalf("the new call's cause: %v", err)
	}
	release.Do(func() { close(ht.release) })
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","result":"first","id":4}`, p.read())
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","error":{"code":-32002,"message":"Request cancelled"},"id":4}`, p.read())
}

// A connection reuses the string of the method name it read last: calls
// that alternate between methods, or spell a name with escapes, still
// reach their own handlers.
func TestMethodNamesOnOneConnection(t *testing.T) {
	p := newRawPeer(t, &Options{Router: benchMux()})
	for _, tt := range []struct{ req, want string }{
		{`{"jsonrpc":"2.0","method":"echo","params":[1],"id":1}`, `{"jsonrpc":"2.0","result":[1],"id":1}`},
		{`{"jsonrpc":"2.0","method":"echo","params":[2],"id":2}`, `{"jsonrpc":"2.0","result":[2],"id":2}`},
		{`{"jsonrpc":"2.0","method":"add","params":{"a":1,"b":2},"id":3}`, `{"jsonrpc":"2.0","result":3,"id":3}`},
		{`{"jsonrpc":"2.0","method":"ech","params":[4],"id":4}`, `{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"},"id":4}`},
		{`{"jsonrpc":"2.0","method":"ec\u0068o","params":[5],"id":5}`, `{"jsonrpc":"2.0","result":[5],"id":5}`},
		{`{"jsonrpc":"2.0","method":"echo","params":[6],"id":6}`, `{"jsonrpc":"2.0","result":[6],"id":6}`},
	} {
		p.write(tt.req)
		testkit.JSONEqual(t, tt.want, p.read())
	}
}
