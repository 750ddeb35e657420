// Package turns holds the turns that busy connections of one server take
// to be read (see the peer package's share.go, which uses them, and
// server.Options.BusyReaders, which sizes them). It is a knob of the
// server's scheduling, not an option a connection's user decides: so it
// is internal.
package turns

import (
	"runtime"
	"time"
)

// Share is the processor share of busy connections, shared by the
// connections of one server through peer.Options.Share. The zero value
// is not usable: call New.
type Share struct {
	turns chan struct{}
	// Waited is how long a read takes at least when it waited for the
	// network (a read that found its message already there returns well
	// within it); tests change it before the Share is used.
	Waited time.Duration
}

// ReadWaited is Share.Waited by default.
const ReadWaited = 10 * time.Microsecond

// New returns a Share that lets n busy connections be read at once.
// n < 1 means one less than the processors Go uses (runtime.GOMAXPROCS),
// at least one.
func New(n int) *Share {
	if n < 1 {
		n = max(1, runtime.GOMAXPROCS(0)-1)
	}
	return &Share{turns: make(chan struct{}, n), Waited: ReadWaited}
}

// Turns returns how many busy connections may be read at once.
func (s *Share) Turns() int { return cap(s.turns) }

// Held returns how many turns are taken now.
func (s *Share) Held() int { return len(s.turns) }

// Take waits for a turn and reports true, or false if stop is closed
// first.
func (s *Share) Take(stop <-chan struct{}) bool {
	select {
	case s.turns <- struct{}{}:
		return true
	case <-stop:
		return false
	}
}

// Give gives back a turn taken.
func (s *Share) Give() { <-s.turns }
