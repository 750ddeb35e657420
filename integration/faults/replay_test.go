package faults_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/switchboard-rpc/switchboard/integration/internal/hubproc"
)

// addressSpace is the limit the hubs of the tests of this file run under
// (ulimit -v 3000000), the limit they were attacked under.
const addressSpace = 3_000_000 << 10

// startLimited starts a demo hub (as hubproc.StartDemo does) limited to
// addressSpace, plus args.
func startLimited(t *testing.T, args ...string) *hubproc.Hub {
	t.Helper()
	return hubproc.Start(t, &hubproc.Options{
		Args:         append([]string{"-demo", "-log-level", "warn"}, args...),
		Admin:        true,
		AddressSpace: addressSpace,
	})
}

// TestReplayAmplification: 400 connections resume a subscription to ">"
// from the start of a full history of 1 MB events, and read nothing. The
// hub holds each replayed event once however many queues it waits in,
// stays alive and within -queue-budget plus the history, counts in its
// queued bytes no more than it holds, and serves everyone else; a
// connection that reads gets every event, in order.
func TestReplayAmplification(t *testing.T) {
	h := startLimited(t)
	fillHistory(t, h)
	c := dial(t, h)
	defer c.CloseNow()
	var hist struct {
		Result struct {
			Epoch string `json:"epoch"`
			Seq   uint64 `json:"seq"` // the latest position
		} `json:"result"`
	}
	got := roundTrip(t, c, `{"jsonrpc":"2.0","method":"rpc.history","params":{"topic":"big.>","limit":1},"id":1}`)
	if err := json.Unmarshal([]byte(got), &hist); err != nil || hist.Result.Epoch == "" {
		t.Fatalf("history: %v %.200s", err, got)
	}
	c.Close(websocket.StatusNormalClosure, "")
	base := h.HeapAfterGC()
	t.Logf("heap after GC with a full history: %.1f MiB", base/(1<<20))

	const conns = 400
	subscribe := fmt.Sprintf(`{"jsonrpc":"2.0","method":"rpc.subscribe","params":{"topic":">","since":{"epoch":%q,"seq":0}},"id":"s"}`, hist.Result.Epoch)
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	cs := make([]*websocket.Conn, conns)
	for i := range cs {
		cs[i] = dial(t, h)
		defer cs[i].CloseNow()
		pipeline(t, ctx, cs[i], []string{subscribe})
	}
	h.WaitMetrics("every connection replaying", func(m map[string]float64) bool {
		return m["switchboard_replayed_total"] >= conns && m["switchboard_connections"] >= conns
	})
	serves(t, h)
	heap := h.HeapAfterGC()
	m := h.Metrics()
	t.Logf("%d connections resuming from the start, unread: heap after GC %.1f MiB, %.1f KiB per connection; queued %.1f MiB; %.0f events replayed",
		conns, heap/(1<<20), (heap-base)/conns/(1<<10), m["switchboard_queued_bytes"]/(1<<20), m["switchboard_replayed_total"])
	if bound := base + 256<<20; heap > bound {
		t.Errorf("heap after GC %.0f bytes, over the history and -queue-budget (%.0f)", heap, bound)
	}
	if q := m["switchboard_queued_bytes"]; q > heap {
		t.Errorf("queued bytes %.0f, more than the heap holds (%.0f)", q, heap)
	}
	if !h.Running() {
		t.Fatal("the hub died")
	}

	// A connection that reads gets the replay, in order, up to the last
	// event published.
	var last uint64
	for n := 1; last < hist.Result.Seq; n++ {
		_, b, err := cs[0].Read(ctx)
		if err != nil {
			t.Fatalf("message %d: %v", n, err)
		}
		var ev struct {
			Method string `json:"method"`
			Params struct {
				Seq    uint64 `json:"seq"`
				Replay string `json:"replay"`
			} `json:"params"`
		}
		if err := json.Unmarshal(b, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Method != "rpc.event" {
			continue // the subscribe result, which may come first
		}
		if ev.Params.Seq <= last || ev.Params.Replay != ">" {
			t.Fatalf("after %d: %.200s", last, b)
		}
		last = ev.Params.Seq
	}
}

// TestLiveQueuedCountsOnce: 100 subscribers that read nothing are sent
// the same 8 events of 900 KB: the queued bytes count each event once,
// as the heap holds it, rather than once per subscriber.
func TestLiveQueuedCountsOnce(t *testing.T) {
	h := startLimited(t, "-history", "0")
	const subscribers = 100
	for range subscribers {
		c := dial(t, h)
		defer c.CloseNow()
		if got := roundTrip(t, c, `{"jsonrpc":"2.0","method":"rpc.subscribe","params":["live"],"id":1}`); !strings.Contains(got, `"result"`) {
			t.Fatalf("subscribe: %s", got)
		}
	}
	pub := dial(t, h)
	defer pub.CloseNow()
	data := strings.Repeat("x", 900_000)
	for i := range 8 {
		got := roundTrip(t, pub, fmt.Sprintf(`{"jsonrpc":"2.0","method":"rpc.publish","params":{"topic":"live","data":"%s"},"id":%d}`, data, i))
		if !strings.Contains(got, fmt.Sprintf(`"delivered":%d`, subscribers)) {
			t.Fatalf("publish: %.200s", got)
		}
	}
	heap := h.HeapAfterGC()
	q := h.Metrics()["switchboard_queued_bytes"]
	t.Logf("%d subscribers, 8 events of 900 KB unread: queued %.1f MiB, heap after GC %.1f MiB", subscribers, q/(1<<20), heap/(1<<20))
	if q > heap {
		t.Errorf("queued bytes %.0f, more than the heap holds (%.0f)", q, heap)
	}
}
