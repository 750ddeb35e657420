//go:build linux

package faults_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestGatheredAnswer: one rpc.call to a topic of 2,000 peers that each
// answer 100 KB, 200 MB in all, from a hub limited to 3 GB of address
// space. The answer is one message within the hub's 1 MiB limit, with
// "truncated": true and "asked": 2000; the hub lives on and serves a new
// client. Before, it gathered all 200 MB and encoded them at once: about
// 1 GB, and out of memory in most runs under this limit.
func TestGatheredAnswer(t *testing.T) {
	const (
		peers = 2000
		size  = 100_000
		limit = 1 << 20 // the hub's -max-message
	)
	h := startLimited(t, "-history", "0", "-max-conns-per-addr", "0")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()

	// The peers: each subscribes to room.big and answers "state" with a
	// string of 100 KB, until its connection is closed.
	answer := []byte(`,"result":"` + strings.Repeat("x", size-2) + `"}`)
	var serving sync.WaitGroup
	conns := make([]*websocket.Conn, peers)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.CloseNow()
			}
		}
		serving.Wait()
	}()
	for i := range conns {
		c := dial(t, h)
		conns[i] = c
		if got := roundTrip(t, c, `{"jsonrpc":"2.0","method":"rpc.subscribe","params":["room.big"],"id":1}`); !strings.Contains(got, `"result"`) {
			t.Fatalf("peer %d subscribing: %s", i, got)
		}
		serving.Go(func() { servePeer(ctx, c, answer) })
	}
	before := procStatus(t, h.Pid(), "VmRSS")
	t.Logf("%d peers connected: RSS %.1f MiB", peers, before/(1<<20))

	caller := dial(t, h)
	defer caller.CloseNow()
	caller.SetReadLimit(limit) // what the project's own clients read
	start := time.Now()
	req := `{"jsonrpc":"2.0","method":"rpc.call","params":{"topic":"room.big","method":"state","timeout":120000},"id":1}`
	if err := caller.Write(ctx, websocket.MessageText, []byte(req)); err != nil {
		t.Fatal(err)
	}
	_, msg, err := caller.Read(ctx)
	took := time.Since(start)
	if !h.Running() {
		t.Fatalf("the hub died:\n%s", h.Log())
	}
	peak := procStatus(t, h.Pid(), "VmHWM")
	t.Logf("hub's peak RSS %.1f MiB", peak/(1<<20))
	if err != nil {
		t.Fatalf("reading the answer within %d bytes: %v", limit, err)
	}
	var reply struct {
		Result struct {
			Results []struct {
				Peer   struct{ ID string }
				Result json.RawMessage
				Error  *struct{ Code int }
			}
			Truncated bool
			Asked     int
		}
	}
	if err := json.Unmarshal(msg, &reply); err != nil {
		t.Fatalf("answer of %d bytes: %v: %.200s", len(msg), err, msg)
	}
	got := reply.Result
	answered := 0
	for _, r := range got.Results {
		if r.Error == nil && len(r.Result) == size {
			answered++
		}
	}
	t.Logf("answer: %d bytes in %v, %d entries (%d results of 100 KB), truncated %v, asked %d",
		len(msg), took.Round(time.Millisecond), len(got.Results), answered, got.Truncated, got.Asked)
	if len(msg) > limit || !got.Truncated || got.Asked != peers || answered == 0 || len(got.Results) >= peers {
		t.Fatalf("answer of %d bytes, %d entries (%d results), truncated %v, asked %d", len(msg), len(got.Results), answered, got.Truncated, got.Asked)
	}
	serves(t, h)
}

// servePeer answers every call on c with answer after its id, until c is
// closed.
func servePeer(ctx context.Context, c *websocket.Conn, answer []byte) {
	var buf bytes.Buffer
	for {
		_, msg, err := c.Read(ctx)
		if err != nil {
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(msg, &req) != nil || req.Method != "state" || req.ID == nil {
			continue
		}
		buf.Reset()
		buf.WriteString(`{"jsonrpc":"2.0","id":`)
		buf.Write(req.ID)
		buf.Write(answer)
		if c.Write(ctx, websocket.MessageText, buf.Bytes()) != nil {
			return
		}
	}
}

// procStatus returns a field of /proc/<pid>/status given in kB, in bytes.
func procStatus(t *testing.T, pid int, field string) float64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err != nil {
				t.Fatalf("%s: %q", field, v)
			}
			return kb * 1024
		}
	}
	t.Fatalf("no %s in /proc/%d/status: the hub is gone", field, pid)
	return 0
}
