package server_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/server"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// A peer that sends nothing, not even the pong to the server's pings, is
// closed after PingInterval + PingTimeout with 1001 "ping timeout", and
// its subscriptions are dropped; a peer that reads (and so answers the
// pings) stays.
func TestPingClosesSilentPeer(t *testing.T) {
	left := make(chan *hub.Peer, 2)
	h := hub.New(&hub.Options{Policy: hub.AllowAll, OnLeave: func(p *hub.Peer) { left <- p }})
	core, logs := observer.New(zap.InfoLevel)
	// The live peer's reader must answer within pingTimeout: on a loaded
	// machine, a goroutine can wait half a second to run.
	const pingTimeout = 2 * time.Second
	ts := newTestServer(t, &server.Options{Hub: h, PingInterval: 100 * time.Millisecond, PingTimeout: pingTimeout, Logger: zap.New(core)})

	live := ts.dialRaw(t, nil)
	roundTrip(t, live, `{"jsonrpc":"2.0","method":"rpc.subscribe","params":["news"],"id":1}`)
	got := make(chan string, 16)
	reading := make(chan struct{})
	go func() { // reads, and so answers pings, until the test ends
		defer close(reading)
		for {
			_, b, err := live.Read(context.Background())
			if err != nil {
				return
			}
			got <- string(b)
		}
	}()
	defer func() { live.CloseNow(); <-reading }()

	silent := ts.dialRaw(t, nil)
	roundTrip(t, silent, `{"jsonrpc":"2.0","method":"rpc.subscribe","params":["news"],"id":1}`)
	start := time.Now()
	// From now on, silent reads nothing: its pongs never go out.
	testkit.Recv(t, left, "the silent peer to be disconnected")
	if elapsed := time.Since(start); elapsed < pingTimeout {
		t.Fatalf("closed after %v, before PingTimeout", elapsed)
	}
	if st := h.Stats(); st.Peers != 1 || st.Subscriptions != 1 {
		t.Fatalf("Stats = %+v, want the live peer alone", st)
	}
	// The live peer went through the same rounds of pings and still works.
	write(t, live, `{"jsonrpc":"2.0","method":"rpc.ping","id":2}`)
	select {
	case reply := <-got:
		testkit.JSONEqual(t, `{"jsonrpc":"2.0","result":{},"id":2}`, reply)
	case <-time.After(testkit.Wait):
		t.Fatal("the live peer got no answer")
	}
	_, _, err := silent.Read(timeout(t)) // what was sent before the close, then the close
	for err == nil {
		_, _, err = silent.Read(timeout(t))
	}
	// Reading at last, the silent peer meets the pings queued before the
	// close and answers them; once the hub has closed the TCP connection
	// that answer fails, so the close frame may never be reached. Either
	// way the connection is gone; the code the hub chose is checked in
	// its log below.
	gone := websocket.CloseStatus(err) == websocket.StatusGoingAway ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)
	if !gone {
		t.Fatalf("silent peer: %v", err)
	}
	// The line is written once the connection's goroutine is done, after
	// the close handshake; Shutdown waits for every one of them.
	if err := ts.srv.Shutdown(timeout(t)); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range logs.FilterMessage("peer disconnected").All() {
		m := e.ContextMap()
		found = found || m["code"] == int64(1001) && m["reason"] == "ping timeout"
	}
	if !found {
		t.Fatalf("no disconnect with 1001 ping timeout logged: %v", logs.FilterMessage("peer disconnected").All())
	}
}

// A peer that pipelines calls and stops reading its replies for a while,
// longer than the WebSocket library gives a ping frame to be written
// (5 s) and than PingInterval, but shorter than PingTimeout, is not
// closed by the pings meanwhile: it is not pinged while its replies wait
// (its own library, its writer blocked behind its calls, would give the
// pong only 5 s: this test failed so under load), and a ping sent before
// waits behind them. Every reply reaches it.
//
// The interval is 2 s, not less: a ping sent in a lull of the client's
// sending, before the hub's queue fills, is read at a moment when the
// client's writer is blocked (as PingIdle says); on a loaded machine a
// lull of 200 ms happened, and the client's library gave up on its pong.
func TestPingWaitsForSlowReader(t *testing.T) {
	const (
		calls = 3000
		pause = 7 * time.Second // over the library's 5 s
	)
	ts := newTestServer(t, &server.Options{PingInterval: 2 * time.Second, PingTimeout: time.Minute})
	ws := ts.dialRaw(t, nil)
	ws.SetReadLimit(-1)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	data := strings.Repeat("x", 10_000) // 30 MB of replies: more than the queue and the sockets hold
	written := make(chan error, 1)
	go func() { // the hub stops reading once its queue is full: the writes wait
		for i := range calls {
			req := fmt.Sprintf(`{"jsonrpc":"2.0","method":"echo","params":["%s"],"id":%d}`, data, i)
			if err := ws.Write(ctx, websocket.MessageText, []byte(req)); err != nil {
				written <- err
				return
			}
		}
		written <- nil
	}()
	testkit.WaitFor(t, "the hub's queue to fill", func() bool { return ts.srv.Stats().QueuedBytes >= 4<<20 })
	paused := time.NewTimer(pause) // the client reads nothing meanwhile
	<-paused.C

	got := make(map[string]bool, calls) // replies come in any order
	for i := range calls {
		_, b, err := ws.Read(ctx)
		if err != nil {
			t.Fatalf("reply %d of %d: %v", i+1, calls, err)
		}
		head, _, _ := strings.Cut(string(b[:min(len(b), 60)]), `,"result":["x`)
		if got[head] || !strings.HasPrefix(head, `{"jsonrpc":"2.0","id":`) {
			t.Fatalf("reply %d: %.80s", i+1, b)
		}
		got[head] = true
	}
	if err := <-written; err != nil {
		t.Fatal(err)
	}
	if got := roundTrip(t, ws, `{"jsonrpc":"2.0","method":"rpc.ping","id":"last"}`); got != `{"jsonrpc":"2.0","id":"last","result":{}}` {
		t.Fatalf("after the pause: %s", got)
	}
}

// A peer that resumes a subscription from the start of a long history
// and stops reading for longer than the WebSocket library gives a ping
// frame to be written (5 s) is not closed by the pings meanwhile: it is
// not pinged while replayed events wait for it (whether it reads them is
// the write-stall watchdog's business), and a ping sent before waits
// behind the events, its pong coming once the peer reads again.
func TestPingWaitsForSlowReplay(t *testing.T) {
	const (
		events = 600
		pause  = 7 * time.Second // over the library's 5 s
	)
	h := hub.New(&hub.Options{Policy: hub.AllowAll, History: hub.History{
		Retention: hub.Retention{Events: -1, Bytes: -1}, MaxBytes: -1,
	}})
	data := strings.Repeat("x", 50_000) // 30 MB in all: more than the queue and the sockets hold
	for range events {
		if _, err := h.Publish(t.Context(), "big", data); err != nil {
			t.Fatal(err)
		}
	}
	ts := newTestServer(t, &server.Options{Hub: h, PingInterval: 200 * time.Millisecond, PingTimeout: time.Minute})
	ws := ts.dialRaw(t, nil)
	ws.SetReadLimit(-1)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	write(t, ws, fmt.Sprintf(`{"jsonrpc":"2.0","method":"rpc.subscribe","params":{"topic":"big","since":{"epoch":%q,"seq":0}},"id":1}`, h.Position().Epoch))
	// The replay writes until the sockets are full (a few MB), then waits
	// for the client, who reads nothing for a while.
	testkit.WaitFor(t, "the replay to start", func() bool { return h.Stats().Stream.Replayed >= 20 })
	paused := time.NewTimer(pause)
	<-paused.C

	for n := 0; n < events; {
		_, b, err := ws.Read(ctx)
		if err != nil {
			t.Fatalf("after %d events: %v", n, err)
		}
		if strings.Contains(string(b[:min(len(b), 60)]), `"rpc.event"`) {
			n++
		}
	}
	if got := roundTrip(t, ws, `{"jsonrpc":"2.0","method":"rpc.ping","id":"last"}`); got != `{"jsonrpc":"2.0","id":"last","result":{}}` {
		t.Fatalf("after the pause: %s", got)
	}
}
