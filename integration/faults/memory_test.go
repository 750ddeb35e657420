package faults_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/switchboard-rpc/switchboard/integration/internal/hubproc"
)

// The tests of this file ask a hub for far more than it may hold in
// memory, as one client or several, and read nothing: calls whose replies
// are large (rpc.history over a full history, echo of large params). The
// hub must hold no more than its bounds say (docs/security.md), keep
// serving everyone else meanwhile, and answer every call once the client
// reads.

// historyBytes is the hub's -history-bytes in these tests (the default).
const historyBytes = 64 << 20

// heapBound is what the hub's heap after a collection may reach under
// these attacks: the history, plus the queues' budget (-queue-budget,
// 256 MiB by default), plus a fixed amount for everything else.
const heapBound = 2*historyBytes + 256<<20 + 64<<20

// fillHistory publishes 100 events of 1,000,000 bytes: the history holds
// what fits in historyBytes of them.
func fillHistory(t *testing.T, h *hubproc.Hub) {
	t.Helper()
	c := dial(t, h)
	defer c.CloseNow()
	data := strings.Repeat("x", 1_000_000-2)
	for i := range 100 {
		req := fmt.Sprintf(`{"jsonrpc":"2.0","method":"rpc.publish","params":{"topic":"big.%d","data":"%s"},"id":%d}`, i, data, i)
		if got := roundTrip(t, c, req); !strings.Contains(got, `"result"`) {
			t.Fatalf("publish: %.200s", got)
		}
	}
	c.Close(websocket.StatusNormalClosure, "")
}

// pipeline writes calls on c without reading.
func pipeline(t *testing.T, ctx context.Context, c *websocket.Conn, calls []string) {
	t.Helper()
	for _, req := range calls {
		if err := c.Write(ctx, websocket.MessageText, []byte(req)); err != nil {
			t.Fatalf("write: %v", err)
		}
	}
}

// readAll reads n replies on c and checks that each is a result of at
// most the hub's message size limit.
func readAll(t *testing.T, ctx context.Context, c *websocket.Conn, n int) {
	t.Helper()
	for i := range n {
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("reply %d of %d: %v", i+1, n, err)
		}
		if len(b) > 1<<20 || !strings.Contains(string(b[:min(len(b), 200)]), `"result"`) {
			t.Fatalf("reply %d of %d bytes: %.200s", i+1, len(b), b)
		}
	}
}

// waitQueued waits until the hub's queues hold 8 MiB.
func waitQueued(h *hubproc.Hub) {
	h.WaitMetrics("holding 8 MiB in its queues", func(m map[string]float64) bool {
		return m["switchboard_queued_bytes"] >= 8<<20
	})
}

// holdsUp checks, under the load what says, that the hub serves a new
// client and that its heap after a collection is within heapBound.
func holdsUp(t *testing.T, h *hubproc.Hub, what string) {
	t.Helper()
	serves(t, h)
	heap := h.HeapAfterGC()
	t.Logf("%s: heap after GC %.1f MiB", what, heap/(1<<20))
	if heap > heapBound {
		t.Errorf("%s: heap after GC %.0f bytes, over %d", what, heap, heapBound)
	}
}

// TestHistoryAmplification: rpc.history calls of 80 bytes each asking
// for the whole history, from clients that read nothing: one connection
// pipelining 30, 40 connections with one each, 20 POSTs read slowly.
func TestHistoryAmplification(t *testing.T) {
	h := hubproc.StartDemo(t)
	fillHistory(t, h)
	base := h.HeapAfterGC()
	t.Logf("heap after GC with a full history: %.1f MiB", base/(1<<20))
	history := func(id int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","method":"rpc.history","params":{"topic":">","limit":1000},"id":%d}`, id)
	}

	t.Run("one connection, 30 calls", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		c := dial(t, h)
		defer c.CloseNow()
		calls := make([]string, 30)
		for i := range calls {
			calls[i] = history(i)
		}
		pipeline(t, ctx, c, calls)
		holdsUp(t, h, "30 history calls unread")
		readAll(t, ctx, c, len(calls))
	})

	t.Run("40 connections", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		conns := make([]*websocket.Conn, 40)
		for i := range conns {
			conns[i] = dial(t, h)
			defer conns[i].CloseNow()
			pipeline(t, ctx, conns[i], []string{history(1)})
		}
		holdsUp(t, h, "40 connections with a history call unread")
		for _, c := range conns {
			readAll(t, ctx, c, 1)
		}
	})

	t.Run("20 slow POSTs", func(t *testing.T) {
		body := history(1)
		var readers sync.WaitGroup
		conns := make([]net.Conn, 20)
		for i := range conns {
			c, err := net.DialTimeout("tcp", h.Addr(), 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			conns[i] = c
			req := "POST /rpc HTTP/1.1\r\nHost: " + h.Addr() + "\r\nContent-Type: application/json\r\nContent-Length: " +
				strconv.Itoa(len(body)) + "\r\nConnection: close\r\n\r\n" + body
			if _, err := io.WriteString(c, req); err != nil {
				t.Fatal(err)
			}
		}
		holdsUp(t, h, "20 POSTs of history unread")
		for _, c := range conns {
			readers.Go(func() {
				_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
				resp, err := http.ReadResponse(bufio.NewReader(c), nil)
				if err != nil {
					t.Error(err)
					return
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != 200 || len(b) > 1<<20 || !strings.Contains(string(b), `"truncated":true`) {
					t.Errorf("POST: %d, %d bytes: %.200s", resp.StatusCode, len(b), b)
				}
			})
		}
		readers.Wait()
	})
}

// TestEchoAmplification: a connection pipelining 200 echo calls of
// 900 KB each and reading nothing: the hub reads no more of them than it
// has room for replies, keeps serving others, and answers all of them
// once the client reads.
func TestEchoAmplification(t *testing.T) {
	h := hubproc.StartDemo(t)
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	c := dial(t, h)
	defer c.CloseNow()
	data := strings.Repeat("x", 900_000)
	const calls = 200
	written := echoes(ctx, c, data, calls) // the hub stops reading: the writes wait for it
	waitQueued(h)
	holdsUp(t, h, "200 echo calls of 900 KB unread")
	readAll(t, ctx, c, calls)
	if err := <-written; err != nil {
		t.Fatal(err)
	}
}

// TestHistoryManyTopics: 300,000 events on as many topics: the hub's heap
// after a collection stays within 1.2 times -history-bytes, as with few
// topics (the history counts each topic's own memory).
func TestHistoryManyTopics(t *testing.T) {
	h := hubproc.StartDemo(t)
	ctx, cancel := context.WithTimeout(t.Context(), 180*time.Second)
	defer cancel()
	c := dial(t, h)
	defer c.CloseNow()
	const topics = 300_000
	for i := range topics { // notifications: nothing to read back
		req := fmt.Sprintf(`{"jsonrpc":"2.0","method":"rpc.publish","params":{"topic":"many.t%d","data":{"n":%d}}}`, i, i)
		if err := c.Write(ctx, websocket.MessageText, []byte(req)); err != nil {
			t.Fatal(err)
		}
	}
	// A call after them is answered after they are all published (which
	// may take longer than roundTrip waits, with the race detector).
	pipeline(t, ctx, c, []string{`{"jsonrpc":"2.0","method":"rpc.history","params":{"topic":"many.>","limit":1},"id":1}`})
	if _, got, err := c.Read(ctx); err != nil || !strings.Contains(string(got), fmt.Sprintf(`"seq":%d`, topics)) {
		t.Fatalf("history after the last publish: %v %.300s", err, got)
	}
	heap := h.HeapAfterGC()
	t.Logf("%d topics of one event: heap after GC %.1f MiB for -history-bytes %d MiB", topics, heap/(1<<20), historyBytes>>20)
	if limit := historyBytes * 1.2; heap > limit {
		t.Errorf("heap after GC %.0f bytes, over 1.2 x -history-bytes (%.0f)", heap, limit)
	}
}

// TestProviderAmplification: a caller pipelining 100 calls of a method a
// peer provides, whose answers are 900 KB each, and reading nothing: the
// hub's heap stays under the bound, it serves a new client, and every
// call is answered once the caller reads. The calls wait for the caller
// to read: the hub's bound on a forwarded call (-forward-timeout, 30 s
// by default) is set beyond the test's, or a slow machine would see
// late answers turned into -32003.
func TestProviderAmplification(t *testing.T) {
	h := hubproc.StartDemo(t, "-forward-timeout", "5m")
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	prov := dial(t, h)
	defer prov.CloseNow()
	if got := roundTrip(t, prov, `{"jsonrpc":"2.0","method":"rpc.provide","params":{"methods":["big.get"]},"id":"p"}`); !strings.Contains(got, `"result"`) {
		t.Fatalf("provide: %s", got)
	}
	answer := strings.Repeat("x", 900_000)
	var served sync.WaitGroup
	defer served.Wait()
	defer prov.CloseNow()
	served.Go(func() { // answers every call it is forwarded
		for {
			_, b, err := prov.Read(ctx)
			if err != nil {
				return
			}
			id := b[strings.Index(string(b), `"id":`)+5:]
			id = id[:strings.IndexAny(string(id), ",}")]
			if prov.Write(ctx, websocket.MessageText, []byte(`{"jsonrpc":"2.0","id":`+string(id)+`,"result":"`+answer+`"}`)) != nil {
				return
			}
		}
	})
	c := dial(t, h)
	defer c.CloseNow()
	const calls = 100
	reqs := make([]string, calls)
	for i := range reqs {
		reqs[i] = fmt.Sprintf(`{"jsonrpc":"2.0","method":"big.get","id":%d}`, i)
	}
	pipeline(t, ctx, c, reqs)
	waitQueued(h)
	holdsUp(t, h, fmt.Sprintf("%d calls of a provided method answering 900 KB, unread", calls))
	readAll(t, ctx, c, calls)
}
