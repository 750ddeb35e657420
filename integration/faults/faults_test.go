package faults_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/switchboard-rpc/switchboard/client"
	"github.com/switchboard-rpc/switchboard/peer"
)

// A client that pipelines 20,000 calls while reading the replies gets
// every reply: the hub slows it down (it stops reading) rather than
// throwing it off.
func TestPipelinedBurst(t *testing.T) {
	h := startHub(t)
	base := h.Baseline()
	c := dial(t, h)
	defer c.CloseNow()

	const n = 20000
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	seen := make([]bool, n+1)
	got := 0
	readErr := make(chan error, 1)
	go func() {
		defer close(readErr)
		for got < n {
			_, b, err := c.Read(ctx)
			if err != nil {
				readErr <- err
				return
			}
			var r response
			if err := json.Unmarshal(b, &r); err != nil || r.Error != nil {
				readErr <- fmt.Errorf("reply %s: %v", b, err)
				return
			}
			id, _ := strconv.Atoi(string(r.ID))
			if id < 1 || id > n || seen[id] {
				readErr <- fmt.Errorf("reply with id %s: unknown or twice", r.ID)
				return
			}
			seen[id] = true
			got++
		}
	}()
	for i := 1; i <= n; i++ {
		req := `{"jsonrpc":"2.0","method":"echo","params":[` + strconv.Itoa(i) + `],"id":` + strconv.Itoa(i) + `}`
		if err := c.Write(ctx, websocket.MessageText, []byte(req)); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	if err := <-readErr; err != nil {
		t.Fatalf("after %d of %d replies: %v", got, n, err)
	}
	c.Close(websocket.StatusNormalClosure, "")
	recovered(t, h, base)
}

// Clients that vanish in the middle of calls (their TCP connections cut,
// no close frame) leave nothing behind: their handlers are cancelled and
// their goroutines end.
func TestClientsKilledMidCall(t *testing.T) {
	h := startHub(t)
	base := h.Baseline()
	for i := range 20 {
		c := dial(t, h)
		for j := range 10 {
			req := fmt.Sprintf(`{"jsonrpc":"2.0","method":"sleep","params":{"ms":60000},"id":%d}`, j)
			if err := c.Write(t.Context(), websocket.MessageText, []byte(req)); err != nil {
				t.Fatalf("client %d: %v", i, err)
			}
		}
		// A call that answers shows the sleeps are running.
		if got := roundTrip(t, c, `{"jsonrpc":"2.0","method":"rpc.ping","id":"p"}`); !strings.Contains(got, `"p"`) {
			t.Fatalf("ping: %s", got)
		}
		c.CloseNow()
	}
	recovered(t, h, base)
}

// A subscriber that stops reading is closed with 1008 once its queue is
// full, while the others receive every event, in order, and the
// publisher is never held up.
func TestStalledSubscriber(t *testing.T) {
	// No history: it would keep 16 MiB of these large events, which the
	// heap's return to the baseline must not count.
	h := startHub(t, "-max-queue", "64")
	base := h.Baseline()
	subscribe := `{"jsonrpc":"2.0","method":"rpc.subscribe","params":["faults.stall"],"id":1}`
	stalled := dial(t, h)
	defer stalled.CloseNow()
	roundTrip(t, stalled, subscribe)
	const readers, events = 5, 2000
	subs := make([]*websocket.Conn, readers)
	for i := range subs {
		subs[i] = dial(t, h)
		defer subs[i].CloseNow()
		roundTrip(t, subs[i], subscribe)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	counts := make([]int, readers)
	for i, s := range subs {
		wg.Go(func() {
			for counts[i] < events {
				_, b, err := s.Read(ctx)
				if err != nil {
					t.Errorf("subscriber %d after %d events: %v", i, counts[i], err)
					return
				}
				if want := fmt.Sprintf(`"n":%d,`, counts[i]); !strings.Contains(string(b), want) {
					t.Errorf("subscriber %d: event %d is %.80s", i, counts[i], b)
					return
				}
				counts[i]++
			}
		})
	}
	pub := dial(t, h)
	defer pub.CloseNow()
	pad := strings.Repeat("x", 16<<10) // large events fill the stalled socket sooner
	for n := range events {
		req := fmt.Sprintf(`{"jsonrpc":"2.0","method":"rpc.publish","params":{"topic":"faults.stall","data":{"n":%d,"pad":"%s"}},"id":%d}`, n, pad, n)
		if err := pub.Write(ctx, websocket.MessageText, []byte(req)); err != nil {
			t.Fatalf("publish %d: %v", n, err)
		}
		if _, _, err := pub.Read(ctx); err != nil {
			t.Fatalf("publish %d: %v", n, err)
		}
	}
	wg.Wait()

	// The hub closed the stalled subscriber as too slow. Reading at last,
	// it finds what was in flight, then a 1008, or the connection cut if
	// the close frame could not get through in time.
	h.WaitMetrics("one slow consumer", func(m map[string]float64) bool {
		return m["switchboard_slow_consumers_total"] == 1
	})
	for {
		_, _, err := stalled.Read(ctx)
		if err != nil {
			if websocket.CloseStatus(err) != websocket.StatusPolicyViolation && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
				t.Fatalf("stalled subscriber: %v, want close 1008 or the connection cut", err)
			}
			break
		}
	}
	for _, c := range append(subs, pub) {
		c.Close(websocket.StatusNormalClosure, "")
	}
	recovered(t, h, base)
}

// A thousand clients come back after the hub restarts, spread over time
// by their jittered backoff rather than all at once.
func TestReconnectStorm(t *testing.T) {
	h := startHub(t)
	const n = 1000
	var reconnected sync.WaitGroup
	var mu sync.Mutex
	var at []time.Time
	var down atomic.Int64
	clients := make([]*client.Client, 0, n)
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	for range n {
		reconnected.Add(1)
		var once sync.Once
		var wasDown atomic.Bool
		c, err := client.Dial(t.Context(), h.WebSocketURL(), &client.Options{
			OnState: func(s client.State, err error) {
				switch s {
				case client.StateDisconnected:
					if wasDown.CompareAndSwap(false, true) {
						down.Add(1)
					}
				case client.StateConnected:
					if wasDown.Load() {
						once.Do(func() {
							mu.Lock()
							at = append(at, time.Now())
							mu.Unlock()
							reconnected.Done()
						})
					}
				}
			},
		})
		if err != nil {
			t.Fatalf("client %d: %v", len(clients), err)
		}
		clients = append(clients, c)
	}
	h.Restart()
	done := make(chan struct{})
	go func() { reconnected.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(90 * time.Second):
		mu.Lock()
		t.Fatalf("%d of %d clients reconnected within 90s", len(at), n)
	}
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	q := func(p int) time.Duration { return at[min(len(at)*p/100, n-1)].Sub(at[0]).Round(time.Millisecond) }
	t.Logf("%d clients saw the hub go and came back; after the first: p10 %v, median %v, p90 %v, last %v",
		down.Load(), q(10), q(50), q(90), q(100))
	if spread := at[n*9/10].Sub(at[n/10]); spread < 100*time.Millisecond {
		t.Errorf("reconnects not spread out: p10 to p90 in %v", spread)
	}
	// Everyone works again.
	for i, c := range clients {
		var r json.RawMessage
		if err := c.Call(t.Context(), "echo", []int{i}, &r); err != nil {
			t.Fatalf("client %d after the restart: %v", i, err)
		}
	}
}

// Peers that stop answering (a frozen process: its kernel still acks, so
// TCP never notices) are closed by the hub's pings, freeing their
// subscriptions; so are connections that upgraded and never sent a byte.
func TestHalfOpenPeers(t *testing.T) {
	h := startHub(t, "-ping-interval", "200ms", "-ping-timeout", "300ms")
	base := h.Baseline()
	for i := range 50 {
		c := dial(t, h) // never read from again: pings go unanswered
		defer c.CloseNow()
		if i%2 == 0 {
			roundTrip(t, c, `{"jsonrpc":"2.0","method":"rpc.subscribe","params":["faults.frozen"],"id":1}`)
		}
	}
	h.WaitMetrics("50 connections", func(m map[string]float64) bool {
		return m["switchboard_connections"] == 50
	})
	recovered(t, h, base)
}

// Connections that send their request headers a byte at a time are cut
// off by the header timeout, while other clients are served meanwhile.
func TestSlowloris(t *testing.T) {
	h := startHub(t, "-header-timeout", "1s")
	base := h.Baseline()
	const n = 50
	closed := make(chan error, n)
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for range n {
		conn, err := net.Dial("tcp", h.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		wg.Go(func() {
			head := "GET /rpc HTTP/1.1\r\nHost: " + h.Addr() + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
			for i := 0; ; i = (i + 1) % len(head) {
				if _, err := conn.Write([]byte{head[i]}); err != nil {
					closed <- err
					return
				}
				select {
				case <-time.After(100 * time.Millisecond):
				case <-ctx.Done():
					closed <- ctx.Err()
					return
				}
			}
		})
	}
	for range 20 { // served while the slow ones trickle
		serves(t, h)
	}
	for range n {
		if err := <-closed; errors.Is(err, context.DeadlineExceeded) {
			t.Fatal("a slow connection was still open after a minute")
		}
	}
	wg.Wait()
	recovered(t, h, base)
}

// Garbage, deep nesting, invalid UTF-8 and oversize frames get the
// protocol's answer, and the hub carries on.
func TestHostileInput(t *testing.T) {
	h := startHub(t)
	base := h.Baseline()
	for _, tt := range []struct {
		name, frame string
		code        int // the error code in the reply
	}{
		{"garbage", `{"jsonrpc":"2.0","method`, -32700},
		{"binary junk", "\x00\xff\xfe{[", -32700},
		{"deep nesting", strings.Repeat("[", 100000) + strings.Repeat("]", 100000), -32600},
		{"deep params", `{"jsonrpc":"2.0","method":"echo","params":` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + `,"id":1}`, -32600},
		{"invalid UTF-8", "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[\"\xc3\x28\"],\"id\":1}", -32700},
		{"not a request", `{"foo":"boo"}`, -32600},
		{"huge batch", "[" + strings.Repeat(`{"jsonrpc":"2.0","method":"echo","id":1},`, 5000) + "1]", -32600},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := dial(t, h)
			defer c.CloseNow()
			var r response
			got := roundTrip(t, c, tt.frame)
			if err := json.Unmarshal([]byte(got), &r); err != nil || r.Error == nil || r.Error.Code != tt.code {
				t.Fatalf("got %.200s, want error %d", got, tt.code)
			}
			// The same connection still works.
			if got := roundTrip(t, c, `{"jsonrpc":"2.0","method":"echo","params":[1],"id":2}`); got != `{"jsonrpc":"2.0","id":2,"result":[1]}` {
				t.Fatalf("after it: %s", got)
			}
			c.Close(websocket.StatusNormalClosure, "")
		})
	}
	t.Run("oversize frame", func(t *testing.T) {
		c := dial(t, h)
		defer c.CloseNow()
		big := `{"jsonrpc":"2.0","method":"echo","params":["` + strings.Repeat("x", 2<<20) + `"],"id":1}`
		_ = c.Write(t.Context(), websocket.MessageText, []byte(big))
		_, _, err := c.Read(t.Context())
		if websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
			t.Fatalf("got %v, want close 1009", err)
		}
	})
	recovered(t, h, base)
}

// A peer subscribing to 100,000 topics is refused past its limit, stays
// connected, does not slow other clients down, and gives everything back
// when it leaves.
func TestManyTopics(t *testing.T) {
	h := startHub(t)
	base := h.Baseline()
	c := dial(t, h)
	defer c.CloseNow()
	refused := 0
	for i := 0; i < 100000; i += 1000 {
		var b bytes.Buffer
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","method":"rpc.subscribe","params":[`)
		for j := range 1000 {
			if j > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"faults.topic%d"`, i+j)
		}
		b.WriteString(`],"id":1}`)
		var r response
		if err := json.Unmarshal([]byte(roundTrip(t, c, b.String())), &r); err != nil {
			t.Fatal(err)
		}
		if r.Error != nil {
			refused++
		}
		if i%10000 == 0 {
			serves(t, h)
		}
	}
	if refused == 0 {
		t.Fatal("100,000 subscriptions accepted: no limit")
	}
	m := h.Metrics()
	t.Logf("subscriptions held: %v; %d of 100 subscribe calls refused; heap %.1f MiB", m["switchboard_subscriptions"], refused, m["go_memstats_heap_inuse_bytes"]/(1<<20))
	c.Close(websocket.StatusNormalClosure, "")
	recovered(t, h, base)
}

// SIGTERM under load: every call accepted is answered, or refused with
// -32005 (not run) or -32002 (cancelled at the end of the grace period),
// or fails because the connection closed with 1001; the hub exits 0.
func TestShutdownUnderLoad(t *testing.T) {
	h := startHub(t, "-shutdown-timeout", "2s")
	const callers = 20
	var wg sync.WaitGroup
	var answered, refused, cancelled, closed atomic.Int64
	var clients []*client.Client
	for range callers {
		c, err := client.Dial(t.Context(), h.WebSocketURL(), &client.Options{MaxAttempts: -1})
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
	}
	started := make(chan struct{}, callers)
	for i, c := range clients {
		wg.Go(func() {
			defer c.Close()
			for n := 0; ; n++ {
				if n == 10 {
					started <- struct{}{}
				}
				method, params := "echo", any([]int{n})
				if n%4 == 0 {
					method, params = "sleep", map[string]int{"ms": 50 * (i%5 + 1)}
				}
				err := c.Call(t.Context(), method, params, nil)
				var e *peer.Error
				var ce *peer.CloseError
				switch {
				case err == nil:
					answered.Add(1)
				case errors.As(err, &e) && e.Code == peer.CodeShuttingDown:
					refused.Add(1)
				case errors.As(err, &e) && e.Code == peer.CodeCancelled:
					cancelled.Add(1)
				case errors.As(err, &ce) && ce.Code == peer.CloseGoingAway:
					closed.Add(1)
					return
				case errors.Is(err, client.ErrConnectionLost), errors.Is(err, io.EOF):
					t.Errorf("caller %d: %v, not a clear error", i, err)
					return
				default:
					t.Errorf("caller %d: unexpected %v", i, err)
					return
				}
			}
		})
	}
	for range callers {
		<-started
	}
	if err := h.Stop(); err != nil {
		t.Errorf("hub exit: %v, want status 0", err)
	}
	wg.Wait()
	t.Logf("answered %d, refused -32005 %d, cancelled %d, callers closed with 1001 %d",
		answered.Load(), refused.Load(), cancelled.Load(), closed.Load())
	if closed.Load() != callers {
		t.Errorf("%d of %d callers saw close 1001", closed.Load(), callers)
	}
}
