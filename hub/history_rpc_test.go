package hub_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/peer"
)

// TestHistoryTruncated: an rpc.history reply never exceeds the message
// size limit; it holds the newest events that fit, oldest first, and says
// "truncated" (docs/streams.md). One that fits says nothing.
func TestHistoryTruncated(t *testing.T) {
	const limit = 10_000
	h := hub.New(&hub.Options{Policy: hub.AllowAll, MaxMessage: limit})
	data := `"` + strings.Repeat("x", 998) + `"` // 1,000 bytes
	for i := range 30 {
		if _, err := h.Publish(ctx(t), fmt.Sprintf("t.%d", i), json.RawMessage(data)); err != nil {
			t.Fatal(err)
		}
	}
	opts := &peer.Options{Router: h.Router(nil)}
	type result struct {
		Seq    uint64
		Events []struct {
			Topic string
			Seq   uint64
			Data  json.RawMessage
		}
		Truncated bool
	}
	for _, tt := range []struct {
		name      string
		id        string
		limit     int
		truncated bool
	}{
		{"fits", `1`, 5, false},
		{"too big", `2`, 1000, true},
		{"too big with a long id", `"` + strings.Repeat("i", 3000) + `"`, 1000, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := fmt.Sprintf(`{"jsonrpc":"2.0","method":"rpc.history","params":{"topic":">","limit":%d},"id":%s}`, tt.limit, tt.id)
			out := peer.Respond(ctx(t), []byte(in), opts)
			if len(out) > limit {
				t.Fatalf("reply of %d bytes, over the limit of %d", len(out), limit)
			}
			var r struct{ Result result }
			if err := json.Unmarshal(out, &r); err != nil {
				t.Fatalf("%v: %.200s", err, out)
			}
			ev := r.Result.Events
			if r.Result.Truncated != tt.truncated || len(ev) == 0 {
				t.Fatalf("truncated %v with %d events, want %v", r.Result.Truncated, len(ev), tt.truncated)
			}
			if !tt.truncated && len(ev) != tt.limit {
				t.Fatalf("%d events, want %d", len(ev), tt.limit)
			}
			// The newest, oldest first, ending with the latest.
			for i, e := range ev {
				want := uint64(30 - len(ev) + i + 1)
				if e.Seq != want || e.Topic != fmt.Sprintf("t.%d", want-1) || string(e.Data) != data {
					t.Fatalf("event %d: seq %d topic %s, want seq %d", i, e.Seq, e.Topic, want)
				}
			}
			// As many as fit: one more would not have.
			if tt.truncated && len(out)+len(data)+40 <= limit {
				t.Fatalf("%d events in %d bytes: room left for another", len(ev), len(out))
			}
		})
	}
}
