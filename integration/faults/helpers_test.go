// Package faults_test puts a real hub process under faults and hostile
// input, as a client on the open internet could: floods, clients that
// vanish or stop reading, connections that never finish, garbage, a
// restart under a thousand clients, SIGTERM under load. After each, the
// hub must serve new clients, and its goroutines and memory must come back
// to where they were.
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

func TestMain(m *testing.M) { hubproc.Main(m) }

// startHub starts a demo hub (hubproc.StartDemo) that keeps no event
// history, which would hold on to what the tests publish.
func startHub(t *testing.T, args ...string) *hubproc.Hub {
	t.Helper()
	return hubproc.StartDemo(t, append([]string{"-history", "0"}, args...)...)
}

// recovered checks what must hold after every fault: the hub serves a
// new client, and its connections, subscriptions, goroutines and heap
// come back to the baseline (hubproc's WaitRecovered).
func recovered(t *testing.T, h *hubproc.Hub, base hubproc.Baseline) {
	t.Helper()
	serves(t, h)
	h.WaitRecovered(base, nil)
}

// serves checks that a new WebSocket client gets an answer.
func serves(t *testing.T, h *hubproc.Hub) {
	t.Helper()
	c := dial(t, h)
	defer c.CloseNow()
	if got := roundTrip(t, c, `{"jsonrpc":"2.0","method":"echo","params":["still here"],"id":1}`); got != `{"jsonrpc":"2.0","id":1,"result":["still here"]}` {
		t.Fatalf("a new client got %s", got)
	}
	c.Close(websocket.StatusNormalClosure, "")
}

func dial(t *testing.T, h *hubproc.Hub) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, h.WebSocketURL(), nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	c.SetReadLimit(-1)
	return c
}

// roundTrip writes req on c and returns the next message that is not a
// progress notification.
func roundTrip(t *testing.T, c *websocket.Conn, req string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, []byte(req)); err != nil {
		t.Fatalf("write: %v", err)
	}
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		// The demo's sleep reports its progress every 100 ms: on a loaded
		// machine a report of a call in flight may come first.
		if !strings.Contains(string(b), `"method":"rpc.progress"`) {
			return string(b)
		}
	}
}

// echoes writes calls echo calls of data on c, ids 0 to calls-1, in a
// goroutine; the channel gets the first write's error, or nil once all
// are written.
func echoes(ctx context.Context, c *websocket.Conn, data string, calls int) <-chan error {
	written := make(chan error, 1)
	go func() {
		for i := range calls {
			req := fmt.Sprintf(`{"jsonrpc":"2.0","method":"echo","params":["%s"],"id":%d}`, data, i)
			if err := c.Write(ctx, websocket.MessageText, []byte(req)); err != nil {
				written <- err
				return
			}
		}
		written <- nil
	}()
	return written
}

// response is the part of a reply the tests look at.
type response struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code int `json:"code"`
	} `json:"error"`
}
