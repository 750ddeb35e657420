package server

import (
	"fmt"
	"net"
	"testing"

	"github.com/coder/websocket"
	"github.com/switchboard-rpc/switchboard/peer"
)

func TestCloseCode(t *testing.T) {
	closed := func(err error) error { return fmt.Errorf("%w: %w", peer.ErrClosed, err) }
	tooBig := fmt.Errorf("%w: read limited at 4097 bytes", websocket.ErrMessageTooBig)
	bye := &peer.CloseError{Code: peer.CloseNormal, Reason: "bye"}
	for _, tt := range []struct {
		name           string
		cause, readErr error
		code           int
		reason         string
	}{
		{"other side closed", closed(bye), bye, 1000, "bye"},
		{"message too big", closed(tooBig), tooBig, 1009, "message too big"},
		{"over peer's own limit", closed(&peer.CloseError{Code: 1009, Reason: "message too big"}), nil, 1009, "message too big"},
		{"too slow", closed(peer.ErrTooSlow), net.ErrClosed, 1008, "too slow"},
		// Shutdown closed the connection after the read failed but
		// before the reader handled it: the read error still tells.
		{"message too big, then Shutdown", peer.ErrClosed, tooBig, 1009, "message too big"},
		{"other side closed, then Shutdown", peer.ErrClosed, bye, 1000, "bye"},
		{"closed by this side", peer.ErrClosed, net.ErrClosed, 0, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, reason := closeCode(tt.cause, tt.readErr)
			if code != tt.code || reason != tt.reason {
				t.Fatalf("closeCode = %d %q, want %d %q", code, reason, tt.code, tt.reason)
			}
		})
	}
}
