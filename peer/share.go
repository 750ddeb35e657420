package peer

import (
	"runtime"
	"time"
)

// This file holds the sharing of the processor between busy connections.
//
// A connection whose other side keeps many calls in flight always has
// its next message waiting: its reader never parks, and runs for as long
// as that side sends. When a few such connections keep every core busy,
// Go's scheduler polls the network only when a core runs out of runnable
// goroutines, or from its monitor every 10 ms: every other connection's
// messages wait for that, and a light client's call that takes 40 µs
// alone takes 10 ms or more. A Share caps how many busy readers run at
// once, below the number of cores. The others wait for a turn, parked,
// so that a core runs out of work often enough to poll the network, and
// a message from any other connection is read at once.
//
// A reader counts as busy once busyAfter reads in a row returned without
// waiting for the network (readWaited). It then takes a turn before
// handling each message, and gives it back before its next read, so that
// busy connections take turns message by message, and no turn is held
// while a read waits. A reader that waits for room for its replies, or
// for an in-flight slot, gives its turn back for the wait (see pause);
// a handler that runs long loses the reader role to a new goroutine
// within a tick of the watchdog, which gives the turn back before it
// reads.

// Share is the processor share of busy connections, shared by the Conns
// of one server through [Options].Share. The zero value is not usable:
// call [NewShare].
type Share struct {
	turns  chan struct{}
	waited time.Duration // readWaited; tests change it
}

// NewShare returns a Share that lets n busy connections be read at
// once. n < 1 means one less than the processors Go uses
// (runtime.GOMAXPROCS), at least one.
func NewShare(n int) *Share {
	if n < 1 {
		n = max(1, runtime.GOMAXPROCS(0)-1)
	}
	return &Share{turns: make(chan struct{}, n), waited: readWaited}
}

// Turns returns how many busy connections may be read at once.
func (s *Share) Turns() int { return cap(s.turns) }

const (
	// readWaited is how long a read takes at least when it waited for the
	// network: a read that found its message already there returns well
	// within it.
	readWaited = 10 * time.Microsecond
	// busyAfter is how many reads in a row that did not wait make a
	// reader busy.
	busyAfter = 8
)

// readStart returns the time the reader starts a read (monotime), having
// given back its turn, if it held one. It runs on the reader; without a
// Share it does nothing.
func (r *reader) readStart() int64 {
	c := r.c
	if c.o.Share == nil {
		return 0
	}
	r.giveTurn()
	return monotime()
}

// readEnd is called by the reader once a read that started at began
// returned a message: a busy reader waits for a turn before it handles
// the message. It returns at once when the connection starts closing
// meanwhile (the message is then refused, as on any closed connection).
func (r *reader) readEnd(began int64) {
	c := r.c
	if c.o.Share == nil {
		return
	}
	if monotime()-began >= int64(c.o.Share.waited) {
		r.streak = 0
		return
	}
	if r.streak < busyAfter {
		r.streak++
		return
	}
	select {
	case c.o.Share.turns <- struct{}{}:
		r.turn = true
	case <-c.closing:
	}
}

// giveTurn gives back the reader's turn, if it holds one. It runs on the
// reader.
func (r *reader) giveTurn() {
	c := r.c
	if r.turn {
		r.turn = false
		<-c.o.Share.turns
	}
}
