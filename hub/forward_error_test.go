package hub

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/switchboard-rpc/switchboard/peer"
)

// TestForwardError: the caller of a forwarded call gets the same answer
// for the same failure, whether its provider is a peer of this hub or of
// another node, and each lost provider is counted once.
func TestForwardError(t *testing.T) {
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	lost := &peer.Error{Code: peer.CodeProviderLost, Message: "Provider lost"}
	answer := &peer.Error{Code: 7, Message: "the peer's own"}
	for _, tc := range []struct {
		name   string
		ctx    context.Context
		err    error
		remote bool
		want   error
		lost   uint64
	}{
		{"peer's answer", context.Background(), answer, false, answer, 0},
		{"peer's answer, remote", context.Background(), answer, true, answer, 0},
		{"peer's -32006", context.Background(), lost, false, lost, 0},
		{"other node's -32006", context.Background(), lost, true, lost, 1},
		{"peer left", context.Background(), fmt.Errorf("gone: %w", peer.ErrClosed), false, errProviderLost, 1},
		{"peer left, remote", context.Background(), fmt.Errorf("gone: %w", peer.ErrClosed), true, errProviderLost, 1},
		{"caller left", gone, errors.New("any"), false, context.Canceled, 0},
		{"caller left, remote", gone, errors.New("any"), true, context.Canceled, 0},
		{"timeout", context.Background(), context.DeadlineExceeded, false, errForwardTimeout, 0},
		{"timeout, remote", context.Background(), context.DeadlineExceeded, true, errForwardTimeout, 0},
		{"unreadable answer", context.Background(), errors.New("bad JSON"), false, errInvalidAnswer, 0},
		{"route failed", context.Background(), errors.New("no route"), true, errProviderLost, 1},
	} {
		h := &Hub{}
		if got := h.forwardError(tc.ctx, tc.err, tc.remote); got != tc.want { //nolint:errorlint // the very value
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
		if n := h.routes.lost.Load(); n != tc.lost {
			t.Errorf("%s: %d providers counted lost, want %d", tc.name, n, tc.lost)
		}
	}
}
