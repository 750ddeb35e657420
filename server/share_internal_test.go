package server

import (
	"runtime"
	"testing"
)

// Every WebSocket of a server shares one turns.Share: by default of one
// turn less than the processors Go uses, at least one; BusyReaders sets
// it, and a negative BusyReaders sets no cap.
func TestBusyReaders(t *testing.T) {
	for _, tc := range []struct {
		busy, want int
	}{
		{0, max(1, runtime.GOMAXPROCS(0)-1)},
		{3, 3},
		{-1, 0},
	} {
		s := New(&Options{BusyReaders: tc.busy})
		got := 0
		if s.share != nil {
			got = s.share.Turns()
		}
		if got != tc.want {
			t.Errorf("BusyReaders %d: %d turns, want %d", tc.busy, got, tc.want)
		}
		if o := s.peerOptions(s.log, who{}); o.Share != s.share {
			t.Errorf("BusyReaders %d: a connection's options do not carry the server's share", tc.busy)
		}
	}
}
