package server_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
	"github.com/switchboard-rpc/switchboard/server"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// TestFanOut1000 subscribes 1000 raw WebSockets and publishes to them:
// every subscriber gets every message once, in publish order.
func TestFanOut1000(t *testing.T) {
	const subs, msgs = 1000, 20
	// No pings: a raw socket answers them only while it is read, and
	// these are read one at a time, which a loaded machine has taken over
	// the minute after which a peer that does not answer is closed.
	ts := newTestServer(t, &server.Options{PingInterval: -1})
	clients := make([]*websocket.Conn, subs)
	for i := range clients {
		clients[i] = ts.dialRaw(t, nil)
		// Half by wildcard, half by name: both match "fan.out".
		pattern := "fan.out"
		if i%2 == 1 {
			pattern = "fan.*"
		}
		write(t, clients[i], `{"jsonrpc":"2.0","method":"rpc.subscribe","params":["`+pattern+`"],"id":1}`)
	}
	for _, ws := range clients {
		if got := read(t, ws); !strings.Contains(got, `"result"`) {
			t.Fatalf("subscribe: %s", got)
		}
	}

	pub := ts.dialRaw(t, nil)
	for i := range msgs {
		write(t, pub, fmt.Sprintf(`{"jsonrpc":"2.0","method":"rpc.publish","params":["fan.out",{"seq":%d}],"id":%d}`, i, i))
	}
	for range msgs {
		var r struct {
			Result struct{ Delivered int }
		}
		if err := json.Unmarshal([]byte(read(t, pub)), &r); err != nil || r.Result.Delivered != subs {
			t.Fatalf("publish delivered %d, want %d (%v)", r.Result.Delivered, subs, err)
		}
	}
	// Each socket buffers its events; read them one client at a time.
	epoch := ts.srv.Hub().Position().Epoch
	for i, ws := range clients {
		for seq := range msgs {
			want := fmt.Sprintf(`{"jsonrpc":"2.0","method":"rpc.event","params":{"topic":"fan.out","data":{"seq":%d},"seq":%d,"epoch":%q}}`, seq, seq+1, epoch)
			if got := read(t, ws); got != want {
				t.Fatalf("client %d, event %d: %s", i, seq, got)
			}
		}
	}
	// Nothing more: a ping's reply is the next message.
	for _, ws := range clients[:10] {
		testkit.JSONEqual(t, `{"jsonrpc":"2.0","result":{},"id":9}`, roundTrip(t, ws, `{"jsonrpc":"2.0","method":"rpc.ping","id":9}`))
	}
	st := ts.srv.Hub().Stats()
	if st.Published != msgs || st.Delivered != subs*msgs || st.Dropped != 0 || st.Subscriptions != subs {
		t.Fatalf("Stats = %+v", st)
	}
}

// TestSlowConsumer: a subscriber that never reads does not hold up the
// publisher or the other subscribers; once MaxQueue events wait for it,
// it is closed with 1008, and /metrics counts it.
func TestSlowConsumer(t *testing.T) {
	const msgs, size = 300, 64 << 10 // 19 MB: more than the socket buffers hold
	h := hub.New(&hub.Options{Policy: hub.AllowAll})
	core, logs := observer.New(zap.InfoLevel)
	ts := newTestServer(t, &server.Options{Hub: h, Conn: peer.Options{MaxQueue: 8}, Logger: zap.New(core)})

	stalled := ts.dialRaw(t, nil)
	fast := ts.dialRaw(t, nil)
	fast.SetReadLimit(1 << 20)
	stalled.SetReadLimit(1 << 20)
	for _, ws := range []*websocket.Conn{stalled, fast} {
		if got := roundTrip(t, ws, `{"jsonrpc":"2.0","method":"rpc.subscribe","params":["big"],"id":1}`); !strings.Contains(got, "result") {
			t.Fatal(got)
		}
	}

	// The publisher keeps at most window events ahead of the fast
	// subscriber, well under MaxQueue: it can keep up, the stalled one not.
	const window = 4
	var wg sync.WaitGroup
	received := make(chan int, 1)
	progress := make(chan int, msgs)
	wg.Go(func() {
		n := 0
		defer func() { received <- n; close(progress) }()
		for n < msgs {
			_, b, err := fast.Read(timeout(t))
			if err != nil {
				t.Errorf("fast subscriber: %v after %d events", err, n)
				return
			}
			if want := fmt.Sprintf(`"data":{"seq":%d,`, n); !strings.Contains(string(b[:min(len(b), 100)]), want) {
				t.Errorf("fast subscriber: event %d is %.80s", n, b)
				return
			}
			n++
			progress <- n
		}
	})

	pad := strings.Repeat("x", size)
	start := time.Now()
	seen := 0
	for i := range msgs {
		for seen < i-window {
			n, ok := <-progress
			if !ok {
				t.Fatalf("fast subscriber stopped at %d", seen)
			}
			seen = n
		}
		if _, err := h.Publish(timeout(t), "big", struct {
			Seq int    `json:"seq"`
			Pad string `json:"pad"`
		}{i, pad}); err != nil {
			t.Fatal(err)
		}
	}
	publishing := time.Since(start)
	wg.Wait()
	if n := <-received; n != msgs {
		t.Fatalf("fast subscriber got %d of %d", n, msgs)
	}
	t.Logf("published %d x %d KiB in %v", msgs, size>>10, publishing)

	st := h.Stats()
	// Events published after the close, until the stalled peer has left
	// the hub, count as dropped.
	if st.SlowClosed != 1 || st.Dropped == 0 || st.Delivered+st.Dropped > 2*msgs || st.Delivered < msgs {
		t.Fatalf("Stats = %+v, want one slow consumer closed", st)
	}
	// The stalled subscriber, reading at last, finds what was buffered,
	// then the end of the connection.
	var err error
	for err == nil {
		_, _, err = stalled.Read(timeout(t))
	}
	// The close frame waits behind the stuck write, and the server gives
	// it 5s: a subscriber that reads within that finds 1008, a later one
	// (a loaded machine) the connection cut. Either way it is gone.
	if status := websocket.CloseStatus(err); status != websocket.StatusPolicyViolation && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		t.Fatalf("stalled subscriber: %v, want close 1008 or the connection cut", err)
	}
	if _, body := get(t, ts.URL+"/metrics"); !strings.Contains(body, "switchboard_slow_consumers_total 1") {
		t.Fatal("metrics do not count the slow consumer")
	}
	fast.Close(websocket.StatusNormalClosure, "")
	// The server logged the disconnect with code 1008 (Shutdown waits
	// for every connection's goroutine, so the line is written).
	if err := ts.srv.Shutdown(timeout(t)); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range logs.FilterMessage("peer disconnected").All() {
		if e.ContextMap()["code"] == int64(1008) {
			found = true
		}
	}
	if !found {
		t.Fatalf("no disconnect with code 1008 logged: %v", logs.FilterMessage("peer disconnected").All())
	}
}

// TestPublishBurst: a burst of rpc.publish notifications, far more than
// MaxInFlight, loses none and keeps its order (the hub's methods take no
// in-flight slot).
func TestPublishBurst(t *testing.T) {
	const msgs = 1000
	ts := newTestServer(t, &server.Options{Conn: peer.Options{MaxInFlight: 4}})
	sub := ts.dialRaw(t, nil)
	roundTrip(t, sub, `{"jsonrpc":"2.0","method":"rpc.subscribe","params":["burst"],"id":1}`)
	pub := ts.dialRaw(t, nil)
	for i := range msgs {
		write(t, pub, fmt.Sprintf(`{"jsonrpc":"2.0","method":"rpc.publish","params":["burst",%d]}`, i))
	}
	epoch := ts.srv.Hub().Position().Epoch
	for i := range msgs {
		want := fmt.Sprintf(`{"jsonrpc":"2.0","method":"rpc.event","params":{"topic":"burst","data":%d,"seq":%d,"epoch":%q}}`, i, i+1, epoch)
		if got := read(t, sub); got != want {
			t.Fatalf("event %d: %s", i, got)
		}
	}
}
