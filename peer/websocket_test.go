package peer

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// wsPair serves srvOpts over a real WebSocket on 127.0.0.1, accepted
// with AcceptWebSocket, and returns a Conn dialed to it.
func wsPair(t *testing.T, srvOpts *Options) *Conn {
	t.Helper()
	done := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(done)
		tr, ws, err := AcceptWebSocket(w, r, nil)
		if err != nil {
			return
		}
		ws.SetReadLimit(int64(srvOpts.withDefaults().MaxMessage))
		NewConn(tr, srvOpts).Serve(r.Context()) //nolint:errcheck
	}))
	t.Cleanup(ts.Close)
	ws, _, err := websocket.Dial(t.Context(), "ws://"+ts.Listener.Addr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ws.SetReadLimit(-1)
	c := NewConn(WebSocket(ws), nil)
	go c.Serve(context.Background()) //nolint:errcheck
	t.Cleanup(func() {
		c.Close()
		<-c.Done()
		<-done
	})
	return c
}

func TestWebSocketTransport(t *testing.T) {
	c := wsPair(t, &Options{Router: specMux(), MaxMessage: 1024})
	var sum float64
	if err := c.Call(t.Context(), "add", []int{2, 3}, &sum); err != nil || sum != 5 {
		t.Fatalf("add: %v %v", sum, err)
	}
	// A message over the server's limit: the WebSocket closes with 1009
	// and the pending call says so.
	err := c.Call(t.Context(), "echo", []string{strings.Repeat("x", 2000)}, nil)
	var ce *CloseError
	if !errors.Is(err, ErrClosed) || !errors.As(err, &ce) || ce.Code != CloseTooBig {
		t.Fatalf("got %v, want a close with 1009", err)
	}
}

// Messages are read whole, whatever their size against the buffer they
// are read into, and each one is the reader's own: calls in flight at
// once, small and large, get their own params back.
func TestWebSocketReadsWholeMessages(t *testing.T) {
	c := wsPair(t, &Options{Router: specMux()})
	var wg sync.WaitGroup
	for i, size := range []int{1, 60, 4095, 4097, 70_000, 200_000} {
		for j := range 4 {
			wg.Go(func() {
				want := strings.Repeat(string(rune('a'+i*4+j)), size)
				var got []string
				if err := c.Call(t.Context(), "echo", []string{want}, &got); err != nil || len(got) != 1 || got[0] != want {
					t.Errorf("echo of %d bytes: %d strings, %v", size, len(got), err)
				}
			})
		}
	}
	wg.Wait()
}

// A WebSocket write stuck because the other side reads nothing ends when
// the connection closes, although the transport's writes do not watch a
// context: the peer is closed with 1008 after WriteStall, and Serve
// returns, its writer gone. (The WebSocket library waits 5 s for the
// close frame's turn before it closes the network connection.)
func TestWebSocketStalledWriteEnds(t *testing.T) {
	big := strings.Repeat("x", 1<<16)
	mux := NewMux()
	mux.Handle("big", Func(func(context.Context, json.RawMessage) (string, error) { return big, nil }))
	served := make(chan error, 1)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			served <- err
			return
		}
		c := NewConn(WebSocket(ws), &Options{Router: mux, WriteStall: 200 * time.Millisecond, MaxQueue: 4})
		served <- c.Serve(context.Background())
	}))
	defer ts.Close()
	ws, _, err := websocket.Dial(t.Context(), "ws://"+ts.Listener.Addr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var caller sync.WaitGroup
	defer caller.Wait()
	defer ws.CloseNow() // ends the caller's writes, if the server has not
	caller.Go(func() {  // calls and never reads the replies
		for {
			if ws.Write(context.Background(), websocket.MessageText, []byte(`{"jsonrpc":"2.0","method":"big","id":1}`)) != nil {
				return
			}
		}
	})
	select {
	case err := <-served:
		ce, ok := errors.AsType[*CloseError](err)
		if !ok || ce.Code != ClosePolicy || !errors.Is(err, ErrTooSlow) {
			t.Fatalf("Serve returned %v, want 1008 with ErrTooSlow", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Serve has not returned: a stuck write did not end")
	}
}

// The benchmarks below compare a call round trip over a real WebSocket on
// 127.0.0.1 with the raw floor: the same bytes echoed by a bare WebSocket
// loop, measured in the same run.

// echoHandler echoes every message back, the raw floor's server.
func echoHandler(w http.ResponseWriter, r *http.Request) {
	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer ws.CloseNow()
	// No context that can end, as the peer's transport and the load
	// generator's floor: coder/websocket would register a context.AfterFunc
	// for every read and write, which the peer does not pay either. The
	// loop ends when the connection does.
	ctx := context.Background()
	for {
		typ, msg, err := ws.Read(ctx)
		if err != nil {
			return
		}
		if err := ws.Write(ctx, typ, msg); err != nil {
			return
		}
	}
}

// peerHandler serves benchMux as a peer.
func peerHandler(w http.ResponseWriter, r *http.Request) {
	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	NewConn(WebSocket(ws), &Options{Router: benchMux()}).Serve(r.Context()) //nolint:errcheck
}

// rawRoundTrips measures a bare WebSocket client sending one request and
// reading one message back, against h.
func rawRoundTrips(b *testing.B, h http.HandlerFunc) {
	ts := httptest.NewServer(h)
	defer ts.Close()
	ws, _, err := websocket.Dial(context.Background(), "ws://"+ts.Listener.Addr().String(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ws.CloseNow()
	msg := []byte(`{"jsonrpc":"2.0","id":1,"method":"add","params":{"a":1,"b":2}}`)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := ws.Write(ctx, websocket.MessageText, msg); err != nil {
			b.Fatal(err)
		}
		if _, _, err := ws.Read(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWebSocketRawEcho(b *testing.B) { rawRoundTrips(b, echoHandler) }

// BenchmarkWebSocketServe is a bare WebSocket client calling a peer: the
// serving side's cost alone, against the same floor.
func BenchmarkWebSocketServe(b *testing.B) { rawRoundTrips(b, peerHandler) }

func BenchmarkWebSocketCall(b *testing.B) {
	ts := httptest.NewServer(http.HandlerFunc(peerHandler))
	defer ts.Close()
	ws, _, err := websocket.Dial(context.Background(), "ws://"+ts.Listener.Addr().String(), nil)
	if err != nil {
		b.Fatal(err)
	}
	c := NewConn(WebSocket(ws), nil)
	go c.Serve(context.Background()) //nolint:errcheck
	defer func() { c.Close(); <-c.Done() }()
	ctx := context.Background()
	params := json.RawMessage(`{"a":1,"b":2}`)
	var res int
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Call(ctx, "add", params, &res); err != nil {
			b.Fatal(err)
		}
	}
}
