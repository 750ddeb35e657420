package server_test

import (
	"strings"
	"testing"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/server"
)

// The hub writes '>' and '<' as they are, not as \u003e and \u003c: a
// client reading the raw text (or a log) sees the pattern it sent.
func TestNoHTMLEscaping(t *testing.T) {
	ts := newTestServer(t, &server.Options{Hub: hub.New(&hub.Options{Policy: hub.AllowAll})})
	ws := ts.dialRaw(t, nil)
	reply := roundTrip(t, ws, `{"jsonrpc":"2.0","method":"rpc.subscribe","params":["chat.>"],"id":1}`)
	if !strings.Contains(reply, `"topics":["chat.>"]`) {
		t.Fatalf("subscribe answered %s, want chat.> unescaped", reply)
	}
	reply = roundTrip(t, ws, `{"jsonrpc":"2.0","method":"rpc.unsubscribe","params":["chat.>"],"id":2}`)
	if strings.Contains(reply, `\u003e`) {
		t.Fatalf("unsubscribe answered %s, with HTML escaping", reply)
	}
	reply = roundTrip(t, ws, `{"jsonrpc":"2.0","method":"rpc.history","params":{"topic":"a<b"},"id":3}`)
	if strings.Contains(reply, `\u003c`) {
		t.Fatalf("history answered %s, with HTML escaping", reply)
	}
}
