package server_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/switchboard-rpc/switchboard/server"
)

// TestHandshakeTimeout: an authentication that hangs cannot hold a
// WebSocket handshake beyond HandshakeTimeout; the client gets 401 then.
func TestHandshakeTimeout(t *testing.T) {
	ts := newTestServer(t, &server.Options{
		HandshakeTimeout: 50 * time.Millisecond,
		Authenticate: func(r *http.Request) (any, error) {
			<-r.Context().Done() // a backend that never answers
			return nil, r.Context().Err()
		},
	})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, ts.wsURL(), nil)
	if err == nil {
		ws.CloseNow()
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("dial: %v, want 401 once the handshake timed out", err)
	}
}
