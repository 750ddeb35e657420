package faults_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestSlowReaderNotPingedOff: a client pipelines 100,000 echo calls and
// pauses its reading for longer than the WebSocket library gives a ping
// frame to be written (5 s) and than -ping-interval, but shorter than
// -ping-timeout: the hub's pings do not close it, and every reply
// reaches it. (With the defaults, a 20 s pause is the same situation;
// the interval is shortened so that the test takes less.)
func TestSlowReaderNotPingedOff(t *testing.T) {
	const (
		calls = 100_000
		pause = 8 * time.Second
	)
	h := startLimited(t, "-ping-interval", "1s")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	c := dial(t, h)
	defer c.CloseNow()
	data := strings.Repeat("x", 1000)      // 100 MB of replies: far more than the sockets hold
	written := echoes(ctx, c, data, calls) // the hub stops reading once its queue is full: the writes wait
	// The sockets hold a few MB of replies: the hub's writes soon wait
	// for the client, who reads nothing for a while.
	h.WaitMetrics("the hub to answer calls", func(m map[string]float64) bool {
		return m[`switchboard_calls_total{method="echo",outcome="ok"}`] >= 100
	})
	paused := time.NewTimer(pause) // the client reads nothing meanwhile
	<-paused.C

	seen := make([]bool, calls)
	for n := range calls {
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("reply %d of %d: %v", n+1, calls, err)
		}
		var id int
		if _, err := fmt.Sscanf(string(b[:min(len(b), 40)]), `{"jsonrpc":"2.0","id":%d,`, &id); err != nil || id < 0 || id >= calls || seen[id] {
			t.Fatalf("reply %d: %.80s", n+1, b)
		}
		seen[id] = true
	}
	if err := <-written; err != nil {
		t.Fatal(err)
	}
	serves(t, h)
}
