package server_test

import (
	"context"
	"errors"
	"io"
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
