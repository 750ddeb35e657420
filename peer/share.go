package peer

// This file holds the sharing of the processor between busy connections.
//
// A connection whose other side keeps many calls in flight always has
// its next message waiting: its reader never parks, and runs for as long
// as that side sends. When a few such connections keep every core busy,
// Go's scheduler polls the network only when a core runs out of runnable
// goroutines, or from its monitor every 10 ms: every other connection's
// messages wait for that, and a light client's call that takes 40 µs
// alone takes 10 ms or more. A Share (Options.Share, internal/turns) caps how many busy readers run at
// once, below the number of cores. The others wait for a turn, parked,
// so that a core runs out of work often enough to poll the network, and
// a message from any other connection is read at once.
//
// A reader counts as busy once busyAfter reads in a row returned without
// waiting for the network (Share.Waited). It then takes a turn before
// handling each message, and gives it back before its next read, so that
// busy connections take turns message by message, and no turn is held
// while a read waits. A reader that waits for room for its replies, or
// for an in-flight slot, gives its turn back for the wait (see pause);
// a handler that runs long loses the reader role to a new goroutine
// within a tick of the watchdog, which gives the turn back before it
// reads.

// busyAfter is how many reads in a row that did not wait for the network
// (Share.Waited) make a reader busy.
const busyAfter = 8

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
	if monotime()-began >= int64(c.o.Share.Waited) {
		r.streak = 0
		return
	}
	if r.streak < busyAfter {
		r.streak++
		return
	}
	r.turn = c.o.Share.Take(c.closing)
}

// giveTurn gives back the reader's turn, if it holds one. It runs on the
// reader.
func (r *reader) giveTurn() {
	c := r.c
	if r.turn {
		r.turn = false
		c.o.Share.Give()
	}
}
