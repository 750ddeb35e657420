package peer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

// The guarantees of a served batch: replies with byte-exact ids, an error
// per element, slow elements that hold up neither the others nor the
// connection, rpc.cancel of any element, and Shutdown's rules.

// batchOf joins messages into a batch.
func batchOf(msgs ...string) string { return "[" + strings.Join(msgs, ",") + "]" }

// gateMux serves "gate", whose handler tells started its id and waits for
// its context to end, "quick", which answers its params at once, and
// "boom", which panics.
func gateMux(started chan<- string) *Mux {
	m := NewMux()
	m.HandleFunc("gate", func(ctx context.Context, req *Request) (any, error) {
		started <- req.ID.String()
		<-ctx.Done()
		return nil, ctx.Err()
	})
	m.Handle("quick", Func(func(_ context.Context, p json.RawMessage) (json.RawMessage, error) { return p, nil }))
	m.HandleFunc("boom", func(context.Context, *Request) (any, error) { panic("boom") })
	return m
}

func TestBatchElementsKeepTheirIDsAndErrors(t *testing.T) {
	p := newRawPeer(t, &Options{Router: gateMux(nil)})
	p.write(batchOf(
		`{"jsonrpc":"2.0","method":"quick","params":[1],"id":1.50}`,
		`{"jsonrpc":"2.0","method":"quick","params":{"a":"b"},"id":"x\u0041"}`,
		`{"jsonrpc":"2.0","method":"quick","params":[3],"id":123456789012345678901234567890}`,
		`{"jsonrpc":"2.0","method":"boom","id":null}`,
		`{"jsonrpc":"2.0","method":"nope","id":5}`,
		`{"jsonrpc":"2.0","method":"quick","params":[6]}`,
		`{"foo":"boo"}`,
		`{"jsonrpc":"2.0","method":"rpc.ping","id":[]}`,
		`{"jsonrpc":"2.0","method":"quick","params":[7],"id":-0}`,
	))
	got := p.read()
	for _, id := range []string{`"id":1.50`, `"id":"x\u0041"`, `"id":123456789012345678901234567890`, `"id":-0`} {
		if !strings.Contains(got, id) {
			t.Errorf("reply lacks %s byte for byte: %s", id, got)
		}
	}
	testkit.JSONEqual(t, batchOf(
		`{"jsonrpc":"2.0","result":[1],"id":1.50}`,
		`{"jsonrpc":"2.0","result":{"a":"b"},"id":"xA"}`,
		`{"jsonrpc":"2.0","result":[3],"id":123456789012345678901234567890}`,
		`{"jsonrpc":"2.0","error":{"code":-32603,"message":"Internal error"},"id":null}`,
		`{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"},"id":5}`,
		`{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request"},"id":null}`,
		`{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request"},"id":null}`,
		`{"jsonrpc":"2.0","result":[7],"id":-0}`,
	), got)
}

// A slow element holds up the others of its batch only until helpers
// join in, and the connection's other calls and rpc.cancel only until
// the watchdog moves the reading off the batch.
func TestBatchSlowElement(t *testing.T) {
	started := make(chan string, 4)
	ran := make(chan struct{}, 50)
	m := gateMux(started)
	m.Handle("count", Func(func(_ context.Context, p json.RawMessage) (json.RawMessage, error) {
		ran <- struct{}{}
		return p, nil
	}))
	p := newRawPeer(t, &Options{Router: m})
	msgs := []string{`{"jsonrpc":"2.0","method":"gate","id":"slow"}`}
	for i := range 50 {
		msgs = append(msgs, fmt.Sprintf(`{"jsonrpc":"2.0","method":"count","params":[%d],"id":%d}`, i, i))
	}
	p.write(batchOf(msgs...))
	if id := recv(t, started); id != `"slow"` {
		t.Fatalf("started %s", id)
	}
	// The quick elements run while the slow one waits; so does a single
	// call sent after the batch.
	p.write(`{"jsonrpc":"2.0","method":"quick","params":["single"],"id":"single"}`)
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","result":["single"],"id":"single"}`, p.read())
	timeout := time.After(testkit.Wait)
	for range 50 {
		select {
		case <-ran:
		case <-timeout:
			t.Fatal("the quick elements wait for the slow one")
		}
	}
	p.write(`{"jsonrpc":"2.0","method":"rpc.cancel","params":{"id":"slow"}}`)
	var replies []struct {
		ID     json.RawMessage
		Result json.RawMessage
		Error  *Error
	}
	if err := json.Unmarshal([]byte(p.read()), &replies); err != nil {
		t.Fatal(err)
	}
	if len(replies) != 51 {
		t.Fatalf("%d replies, want 51", len(replies))
	}
	seen := map[string]bool{}
	for _, r := range replies {
		seen[string(r.ID)] = true
		switch {
		case string(r.ID) == `"slow"`:
			if r.Error == nil || r.Error.Code != CodeCancelled {
				t.Errorf("slow element: %v, want -32002", r.Error)
			}
		case r.Error != nil || string(r.Result) != "["+string(r.ID)+"]":
			t.Errorf("element %s: %s %v", r.ID, r.Result, r.Error)
		}
	}
	if len(seen) != 51 {
		t.Fatalf("%d distinct ids in %d replies", len(seen), len(replies))
	}
}

// rpc.cancel reaches a batch element that runs and one that waits for a
// worker; the latter is answered -32002 without running.
func TestBatchCancelElements(t *testing.T) {
	started := make(chan string, 4)
	p := newRawPeer(t, &Options{Router: gateMux(started), BatchWorkers: 2})
	p.write(batchOf(
		`{"jsonrpc":"2.0","method":"gate","id":1}`,
		`{"jsonrpc":"2.0","method":"gate","id":2}`,
		`{"jsonrpc":"2.0","method":"gate","id":3}`,
		`{"jsonrpc":"2.0","method":"quick","params":[4],"id":4}`,
	))
	running := map[string]bool{recv(t, started): true, recv(t, started): true} // two workers, both busy
	if !running["1"] || !running["2"] {
		t.Fatalf("running %v, want 1 and 2", running)
	}
	p.write(`{"jsonrpc":"2.0","method":"rpc.cancel","params":{"id":3}}`) // waiting
	p.write(`{"jsonrpc":"2.0","method":"rpc.cancel","params":{"id":1}}`) // running
	// Element 1's worker goes on with 3, cancelled, and 4.
	p.write(`{"jsonrpc":"2.0","method":"rpc.cancel","params":{"id":2}}`)
	testkit.JSONEqual(t, batchOf(
		`{"jsonrpc":"2.0","error":{"code":-32002,"message":"Request cancelled"},"id":1}`,
		`{"jsonrpc":"2.0","error":{"code":-32002,"message":"Request cancelled"},"id":2}`,
		`{"jsonrpc":"2.0","error":{"code":-32002,"message":"Request cancelled"},"id":3}`,
		`{"jsonrpc":"2.0","result":[4],"id":4}`,
	), p.read())
	select {
	case id := <-started:
		t.Fatalf("element %s ran after it was cancelled", id)
	default:
	}
}

// When Shutdown's grace period ends, a batch's elements still running
// are cancelled and the batch answered; calls arriving meanwhile get
// -32005.
func TestBatchShutdown(t *testing.T) {
	started := make(chan string, 4)
	ran := make(chan struct{}, 1)
	m := gateMux(started)
	m.Handle("mark", Func(func(_ context.Context, p json.RawMessage) (json.RawMessage, error) {
		ran <- struct{}{}
		return p, nil
	}))
	p := newRawPeer(t, &Options{Router: m})
	p.write(batchOf(
		`{"jsonrpc":"2.0","method":"gate","id":1}`,
		`{"jsonrpc":"2.0","method":"mark","params":[2],"id":2}`,
	))
	recv(t, started)
	recv(t, ran)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- p.c.Shutdown(ctx) }()
	p.waitForDraining()
	p.write(batchOf(`{"jsonrpc":"2.0","method":"quick","params":[3],"id":3}`, `{"jsonrpc":"2.0","method":"quick","params":[4]}`))
	testkit.JSONEqual(t, `[{"jsonrpc":"2.0","error":{"code":-32005,"message":"Shutting down"},"id":3}]`, p.read())
	cancel()
	testkit.JSONEqual(t, batchOf(
		`{"jsonrpc":"2.0","error":{"code":-32002,"message":"Request cancelled"},"id":1}`,
		`{"jsonrpc":"2.0","result":[2],"id":2}`,
	), p.read())
	if err := recv(t, done); !errors.Is(err, context.Canceled) {
		t.Fatalf("Shutdown: %v", err)
	}
}

// A batch element that calls back to its caller and waits gets its
// answer: the reading moves off the batch.
func TestBatchElementCallsBack(t *testing.T) {
	m := NewMux()
	m.HandleFunc("callback", func(ctx context.Context, _ *Request) (any, error) {
		var s string
		err := ConnFromContext(ctx).Call(ctx, "name", nil, &s)
		return s, err
	})
	caller := NewMux()
	caller.Handle("name", Func(func(context.Context, struct{}) (string, error) { return "caller", nil }))
	a, _ := pipe(t, &Options{Router: caller}, &Options{Router: m, CallTimeout: testkit.Wait})
	var r1, r2 string
	batch := []BatchElem{{Method: "callback", Result: &r1}, {Method: "callback", Result: &r2}}
	if err := a.Batch(t.Context(), batch); err != nil {
		t.Fatal(err)
	}
	if batch[0].Err != nil || batch[1].Err != nil || r1 != "caller" || r2 != "caller" {
		t.Fatalf("got %q %v, %q %v", r1, batch[0].Err, r2, batch[1].Err)
	}
}

// A handler's context: cancelled by rpc.cancel with errCancelled as its
// cause, and so are the contexts the handler derives from it; cancelled
// once the handler returned; the connection's values and ConnFromContext
// reach it.
func TestHandlerContext(t *testing.T) {
	type key struct{}
	kept := make(chan context.Context, 2)
	derived := make(chan error, 1)
	started := make(chan struct{}, 1)
	m := NewMux()
	m.HandleFunc("quick", func(ctx context.Context, _ *Request) (any, error) {
		if ctx.Err() != nil || ctx.Value(key{}) != "v" || ConnFromContext(ctx) == nil {
			return nil, errors.New("bad context")
		}
		kept <- ctx
		return "ok", nil
	})
	m.HandleFunc("wait", func(ctx context.Context, _ *Request) (any, error) {
		dctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		started <- struct{}{}
		<-dctx.Done()
		derived <- context.Cause(dctx)
		return nil, context.Cause(ctx)
	})
	ta, tb := NewPipeTransport()
	srv := NewConn(ta, &Options{Router: m})
	go srv.Serve(context.WithValue(context.Background(), key{}, "v")) //nolint:errcheck
	t.Cleanup(func() { srv.Close(); <-srv.Done() })
	p := &rawPeer{t: t, c: srv, raw: tb}

	for _, msg := range []string{
		`{"jsonrpc":"2.0","method":"quick","id":1}`,
		batchOf(`{"jsonrpc":"2.0","method":"quick","id":2}`, `{"jsonrpc":"2.0","method":"quick","id":3}`),
	} {
		p.write(msg)
		p.read()
		for range strings.Count(msg, "quick") {
			ctx := recv(t, kept)
			recv(t, ctx.Done()) // the handler returned
			if !errors.Is(ctx.Err(), context.Canceled) {
				t.Fatalf("after return: %v", ctx.Err())
			}
		}
	}

	for _, msg := range []string{
		`{"jsonrpc":"2.0","method":"wait","id":4}`,
		batchOf(`{"jsonrpc":"2.0","method":"wait","id":4}`),
	} {
		p.write(msg)
		recv(t, started)
		p.write(`{"jsonrpc":"2.0","method":"rpc.cancel","params":{"id":4}}`)
		if err := recv(t, derived); !errors.Is(err, errCancelled) {
			t.Fatalf("derived context's cause: %v", err)
		}
		want := `{"jsonrpc":"2.0","error":{"code":-32002,"message":"Request cancelled"},"id":4}`
		if strings.HasPrefix(msg, "[") {
			want = batchOf(want)
		}
		testkit.JSONEqual(t, want, p.read())
	}
}

// Over HTTP POST too, helpers join a batch whose element takes long: the
// slow element here waits for one behind it.
func TestRespondBatchHelpers(t *testing.T) {
	ran := make(chan struct{})
	m := NewMux()
	m.HandleFunc("first", func(context.Context, *Request) (any, error) {
		select {
		case <-ran:
			return "after second", nil
		case <-time.After(testkit.Wait):
			return nil, errors.New("the second element did not run meanwhile")
		}
	})
	m.HandleFunc("second", func(context.Context, *Request) (any, error) {
		close(ran)
		return "ran", nil
	})
	out := Respond(t.Context(), []byte(batchOf(
		`{"jsonrpc":"2.0","method":"first","id":1}`,
		`{"jsonrpc":"2.0","method":"second","id":2}`,
	)), &Options{Router: m})
	testkit.JSONEqual(t, batchOf(
		`{"jsonrpc":"2.0","result":"after second","id":1}`,
		`{"jsonrpc":"2.0","result":"ran","id":2}`,
	), string(out))
}

// A handler's context ends once the handler returned, whichever of its
// end, a cancel and a first look at Done comes first.
func TestHandlerContextRaces(t *testing.T) {
	parent, stop := context.WithCancel(t.Context())
	defer stop()
	for range 1000 {
		var h handlerCtx
		h.init(parent, nil, &Request{ID: ID{"1"}}, true)
		done := make(chan struct{})
		go func() {
			defer close(done)
			h.cancel(errCancelled)
		}()
		go h.Done()
		h.end()
		<-done
		select {
		case <-h.Done():
		default:
			t.Fatal("Done is open after the handler returned")
		}
		if h.Err() == nil {
			t.Fatal("Err is nil after the handler returned")
		}
	}
}

// A handler may append to its params, as to any slice it is given: that
// must not write over the rest of the frame, where the next element is.
func TestBatchHandlerAppendsToParams(t *testing.T) {
	m := NewMux()
	m.HandleFunc("grow", func(_ context.Context, req *Request) (any, error) {
		grown := append(req.Params, strings.Repeat(" ", 200)...)
		return len(grown), nil
	})
	m.Handle("quick", Func(func(_ context.Context, p json.RawMessage) (json.RawMessage, error) { return p, nil }))
	p := newRawPeer(t, &Options{Router: m})
	p.write(batchOf(
		`{"jsonrpc":"2.0","method":"grow","params":[1],"id":1}`,
		`{"jsonrpc":"2.0","method":"quick","params":[2],"id":2}`,
		`{"jsonrpc":"2.0","method":"quick","params":["`+strings.Repeat("x", 300)+`"],"id":3}`,
	))
	testkit.JSONEqual(t, batchOf(
		`{"jsonrpc":"2.0","result":203,"id":1}`,
		`{"jsonrpc":"2.0","result":[2],"id":2}`,
		`{"jsonrpc":"2.0","result":["`+strings.Repeat("x", 300)+`"],"id":3}`,
	), p.read())
}

// Each request of a batch gets its own id, as written, whether it came
// on a connection or in a POST body, among notifications, responses and
// invalid elements that have none of their own.
func TestBatchHandlersSeeTheirIDs(t *testing.T) {
	m := NewMux()
	m.HandleFunc("id", func(_ context.Context, req *Request) (any, error) { return req.ID.String(), nil })
	body := batchOf(
		`{"jsonrpc":"2.0","method":"id","id":7}`,
		`{"jsonrpc":"2.0","method":"id"}`,
		`{"jsonrpc":"2.0","result":1,"id":99}`,
		`{"jsonrpc":"2.0","method":"id","id":"a\"b"}`,
		`{"jsonrpc":"2.0","method":"nope","id":12}`,
		`{"jsonrpc":"2.0","method":"id","id":-1.5e3}`,
	)
	want := batchOf(
		`{"jsonrpc":"2.0","result":"7","id":7}`,
		`{"jsonrpc":"2.0","result":"\"a\\\"b\"","id":"a\"b"}`,
		`{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"},"id":12}`,
		`{"jsonrpc":"2.0","result":"-1.5e3","id":-1.5e3}`,
	)
	testkit.JSONEqual(t, want, string(Respond(context.Background(), []byte(body), &Options{Router: m})))
	p := newRawPeer(t, &Options{Router: m})
	p.write(body)
	testkit.JSONEqual(t, want, p.read())
}
