package server_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/switchboard-rpc/switchboard/peer"
	"github.com/switchboard-rpc/switchboard/server"
)

// TestWriteStallCounted: a peer that reads nothing is closed with 1008
// "write stalled" after WriteStall, and counted as a slow consumer, as
// one too slow for its events is.
func TestWriteStallCounted(t *testing.T) {
	ts := newTestServer(t, &server.Options{Conn: peer.Options{WriteStall: 200 * time.Millisecond}})
	ws := ts.dialRaw(t, nil)
	big := `{"jsonrpc":"2.0","method":"echo","params":["` + strings.Repeat("x", 500_000) + `"],"id":1}`
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	var writer sync.WaitGroup
	defer writer.Wait()
	writer.Go(func() { // calls and never reads the answers
		for ws.Write(ctx, websocket.MessageText, []byte(big)) == nil {
		}
	})
	for ts.srv.Stats().Limited["write_stall"] == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("a peer that reads nothing was not counted as stalled")
		case <-time.After(10 * time.Millisecond): // polling a counter, with a deadline
		}
	}
	resp, err := http.Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(body), "switchboard_slow_consumers_total 1\n") {
		t.Errorf("metrics without one slow consumer:\n%s", grepLines(string(body), "switchboard_slow"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for line := range strings.Lines(s) {
		if strings.Contains(line, sub) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "")
}
