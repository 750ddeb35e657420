package peer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/internal/testkit"

	"github.com/coder/websocket"
)

// Tests of flow control: backpressure, write stalls, liveness, limits
// and shutdown.

// serveWS serves a Conn with opts over a real WebSocket on 127.0.0.1 and
// returns a raw client WebSocket to it.
func serveWS(t *testing.T, opts *Options) *websocket.Conn {
	t.Helper()
	var served sync.WaitGroup
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		defer served.Done()
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		NewConn(WebSocket(ws), opts).Serve(r.Context()) //nolint:errcheck
	}))
	ws, _, err := websocket.Dial(t.Context(), "ws://"+ts.Listener.Addr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ws.SetReadLimit(-1)
	t.Cleanup(func() {
		ws.CloseNow()
		served.Wait()
		ts.Close()
	})
	return ws
}

// A client that pipelines 20,000 calls on one connection while it reads
// the replies gets every reply: a result, never an error, never a close.
// The limits hold it back instead (TCP pushes back on its writes).
func TestPipelinedBurst(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts *Options
	}{
		{"defaults", &Options{Router: specMux()}},
		{"tight limits", &Options{Router: specMux(), MaxInFlight: 4, MaxQueue: 8}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			const calls = 20000
			ws := serveWS(t, tt.opts)
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			start := time.Now()
			written := make(chan error, 1)
			go func() {
				for i := range calls {
					msg := `{"jsonrpc":"2.0","method":"echo","params":[` + strconv.Itoa(i) + `],"id":` + strconv.Itoa(i) + `}`
					if err := ws.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
						written <- err
						return
					}
				}
				written <- nil
			}()
			seen := make([]bool, calls)
			for range calls {
				_, b, err := ws.Read(ctx)
				if err != nil {
					t.Fatalf("read: %v", err)
				}
				var r struct {
					ID     int
					Result []int
					Error  *Error
				}
				if err := json.Unmarshal(b, &r); err != nil || r.Error != nil || len(r.Result) != 1 || r.Result[0] != r.ID || seen[r.ID] {
					t.Fatalf("reply %s", b)
				}
				seen[r.ID] = true
			}
			if err := <-written; err != nil {
				t.Fatal(err)
			}
			t.Logf("%d pipelined calls answered in %v", calls, time.Since(start))
		})
	}
}

// A peer that never reads what it is sent is closed once writes have made
// no progress for WriteStall, with 1008.
func TestWriteStallClosesNonReader(t *testing.T) {
	const stall = 200 * time.Millisecond
	p := newRawPeer(t, &Options{WriteStall: stall, MaxQueue: 4})
	start := time.Now()
	var writer sync.WaitGroup
	defer writer.Wait()
	writer.Go(func() { // sends pings and never reads the answers
		for {
			if err := p.raw.Write(context.Background(), []byte(`{"jsonrpc":"2.0","method":"rpc.ping","id":1}`)); err != nil {
				return // closed
			}
		}
	})
	select {
	case <-p.c.Done():
	case <-time.After(testkit.Wait):
		t.Fatal("a peer that does not read is still open")
	}
	err := p.c.Err()
	ce, ok := errors.AsType[*CloseError](err)
	if elapsed := time.Since(start); !ok || ce.Code != ClosePolicy || !errors.Is(err, ErrTooSlow) || elapsed < stall {
		t.Fatalf("after %v: %v, want 1008 with ErrTooSlow after %v", elapsed, err, stall)
	}
}

// A handler waiting on a call back to its caller lends its slot, so the
// reader can read on to the answer even when the caller has pipelined
// more calls than MaxInFlight ahead of it.
func TestCallbackLendsSlot(t *testing.T) {
	callee := NewMux()
	callee.HandleFunc("callback", func(ctx context.Context, _ *Request) (any, error) {
		var s string
		err := ConnFromContext(ctx).Call(ctx, "name", nil, &s)
		return s, err
	})
	// Without the loan, the callbacks would time out (-32003), well
	// before p.read gives up (testkit.Wait).
	p := newRawPeer(t, &Options{Router: callee, MaxInFlight: 4, CallTimeout: 10 * time.Second})
	const calls = 8 // MaxInFlight running, as many lent
	for i := range calls {
		p.write(fmt.Sprintf(`{"jsonrpc":"2.0","method":"callback","id":%d}`, i))
	}
	// Only now answer the callbacks: the answers arrive behind the calls.
	for done := 0; done < calls; {
		var m struct {
			ID     json.RawMessage
			Method string
			Result string
			Error  *Error
		}
		if err := json.Unmarshal([]byte(p.read()), &m); err != nil {
			t.Fatal(err)
		}
		switch {
		case m.Method == "name":
			p.write(`{"jsonrpc":"2.0","result":"caller","id":` + string(m.ID) + `}`)
		case m.Error != nil || m.Result != "caller":
			t.Fatalf("callback %s: %q, %v", m.ID, m.Result, m.Error)
		default:
			done++
		}
	}
}

// Ping is answered by a live peer, fails when the peer sends nothing for
// the timeout, and does not blame the peer while this side's reader waits
// for a slot and cannot read the answer.
func TestPing(t *testing.T) {
	ctx := func(d time.Duration) context.Context {
		c, cancel := context.WithTimeout(t.Context(), d)
		t.Cleanup(cancel)
		return c
	}
	a, _ := pipe(t, nil, nil)
	if err := a.Ping(ctx(testkit.Wait)); err != nil {
		t.Fatalf("live peer: %v", err)
	}
	silent := newRawPeer(t, nil) // its raw side answers nothing
	if err := silent.c.Ping(ctx(100 * time.Millisecond)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("silent peer: %v, want DeadlineExceeded", err)
	}

	m, started := waitMux()
	busy := newRawPeer(t, &Options{Router: m, MaxInFlight: 1})
	busy.write(`{"jsonrpc":"2.0","method":"wait","id":1}`)
	<-started
	busy.write(`{"jsonrpc":"2.0","method":"wait","id":2}`) // waits for the slot
	testkit.WaitFor(t, "the reader to wait for a slot", busy.c.paused.Load)
	if err := busy.c.Ping(ctx(100 * time.Millisecond)); err != nil {
		t.Fatalf("peer unread while the reader waits: %v, want nil", err)
	}
}

// Over the rate limit, calls get -32004 and notifications are dropped;
// each batch element counts; the connection stays open.
func TestRateLimit(t *testing.T) {
	var limited atomic.Int32
	p := newRawPeer(t, &Options{Router: specMux(), Rate: 0.001, Burst: 5, OnLimit: func(l Limit) {
		if l == LimitRate {
			limited.Add(1)
		}
	}})
	var sb strings.Builder
	sb.WriteString("[")
	for i := range 8 {
		if i > 0 {
			sb.WriteString(",")
		}
		fmt.Fprintf(&sb, `{"jsonrpc":"2.0","method":"add","params":[%d,1],"id":%d}`, i, i)
	}
	sb.WriteString(`,{"jsonrpc":"2.0","method":"update","params":[1]}]`)
	var replies []struct {
		ID    int
		Error *Error
	}
	if err := json.Unmarshal([]byte(p.roundTrip(sb.String())), &replies); err != nil {
		t.Fatal(err)
	}
	ok, refused := 0, 0
	for _, r := range replies {
		switch {
		case r.Error == nil:
			ok++
		case r.Error.Code == CodeOverloaded:
			refused++
		default:
			t.Fatalf("reply %+v", r)
		}
	}
	// The round trip's rpc.ping was over the limit too: it was refused,
	// which does not stop the connection.
	if ok != 5 || refused != 3 || limited.Load() != 5 {
		t.Fatalf("%d results, %d refused, %d over the limit; want 5, 3, 5", ok, refused, limited.Load())
	}
	if p.c.Err() != nil {
		t.Fatalf("closed: %v", p.c.Err())
	}
}

// A message nested deeper than MaxDepth gets one -32600 error naming the
// limit, and the connection stays open; MaxDepth levels are fine.
func TestMaxDepth(t *testing.T) {
	nested := func(levels int) string { // the envelope is one level
		return `{"jsonrpc":"2.0","method":"echo","params":` + strings.Repeat("[", levels-1) + strings.Repeat("]", levels-1) + `,"id":1}`
	}
	var limited atomic.Int32
	opts := &Options{Router: specMux(), MaxDepth: 8, OnLimit: func(l Limit) {
		if l == LimitDepth {
			limited.Add(1)
		}
	}}
	p := newRawPeer(t, opts)
	deep := `{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request","data":"nested deeper than 8 levels"},"id":null}`
	testkit.JSONEqual(t, deep, p.roundTrip(nested(9)))
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","result":[[[[[[[]]]]]]],"id":1}`, p.roundTrip(nested(8)))
	testkit.JSONEqual(t, deep, string(Respond(t.Context(), []byte("["+nested(8)+"]"), opts)))
	if limited.Load() != 2 {
		t.Fatalf("OnLimit saw %d messages too deep, want 2", limited.Load())
	}
}

// When Shutdown's grace period ends, the calls still running are
// cancelled and answered -32002 before the connection closes with 1001.
func TestShutdownCancelsAtDeadline(t *testing.T) {
	m, started := waitMux()
	p := newRawPeer(t, &Options{Router: m})
	p.write(`{"jsonrpc":"2.0","method":"wait","id":1}`)
	<-started
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if err := p.c.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown: %v", err)
	}
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","error":{"code":-32002,"message":"Request cancelled"},"id":1}`, p.read())
	_, err := p.raw.Read(t.Context())
	if ce, ok := errors.AsType[*CloseError](err); !ok || ce.Code != CloseGoingAway {
		t.Fatalf("got %v, want 1001", err)
	}
}
