package peer

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// This file holds the reader of a served Conn and the watchdog that lets
// it run handlers itself.
//
// The reader runs each concurrent call's handler itself and writes its
// reply itself (the outbox writes inline when no writer is active): a call
// then costs no goroutine hand-off at all, and a busy connection has one
// runnable goroutine, not one per call, so it does not crowd out the
// other connections. A handler that takes long must not hold up the
// connection's other calls (nor the rpc.cancel meant for it), so a
// process-wide watchdog looks at the readers that ran handlers lately,
// and when it finds one in the same handler as at its previous look, it
// takes the reader's role from it and starts a new reader for the
// connection. The old one finishes its call and ends.
//
// The watchdog looks every readerLook; a look that finds a reader in a
// handler is followed by another readerTick later. A handler that runs
// longer than readerTick thus loses the reader within readerLook plus
// readerTick, and quick handlers cost the process a timer every
// readerLook, not every readerTick: each time the timer fires, the
// runtime wakes a thread, which on a connection making calls one after
// another cost 8 µs of the server's CPU per call with a 1 ms tick, a
// fifth of the total.
//
// At most one goroutine holds a connection's reader role at a time; what
// "belongs to the reader" belongs to the holder. The role passes by a
// move of its state word (role.go), so that the watchdog takes it only
// from a reader still in its handler, and the reader learns it lost it.
// On a connection the client package dialed, the role can also be parked
// and taken by a caller, who reads its own reply with the same *reader
// (see own.go).

// readerTick is how long after a look that found a reader in a handler
// the watchdog looks again: a handler that runs longer may lose the
// reader.
const readerTick = time.Millisecond

// readerLook is the watchdog's period otherwise: a handler holds up its
// connection's reading for readerLook plus readerTick at most.
const readerLook = 5 * time.Millisecond

// readerLinger is how long the watchdog goes on looking with no
// connection to watch before it ends.
const readerLinger = 50 * time.Millisecond

// readerWatch is the watchdog's list of connections whose reader ran a
// handler lately.
var readerWatch struct {
	mu      sync.Mutex // before batch.mu (see Conn.mu)
	conns   []*Conn
	running bool
}

// reader is the reader role of a connection. One goroutine at a time
// holds the role: Serve's, then each one the watchdog starts when it
// takes the role from a reader in a slow handler (move), which
// hands the new goroutine the same *reader. The functions that run on
// the reader are methods of *reader: they alone touch the holder's
// fields, and a goroutine that lost the role (exit reports false)
// returns without touching them again.
type reader struct {
	c *Conn

	// What others see of the role, changed atomically. state is its
	// state word, changed by step alone (role.go).
	state atomic.Uint64
	// batch is the batch the holder runs, if any (see startBatch), which
	// the watchdog takes with the role.
	batch atomic.Pointer[batch]
	// spawning is set when the watchdog took the role from a slow
	// handler, and cleared at its next look (or once no call runs):
	// meanwhile concurrent calls run on workers.
	spawning atomic.Bool
	// loops counts the goroutines in readLoop: the holder, and those
	// that lost the role in a handler, for tests.
	loops atomic.Int32
	// away: Serve's goroutine no longer reads (see Serve), for tests.
	away atomic.Bool
	// watchSeq is the handler count at the watchdog's last look; guarded
	// by readerWatch.mu.
	watchSeq uint64
	// ahead is the transport when it can tell that its next message is
	// read already (the transport's MessageWaiting, see readAhead); set once,
	// by NewConn.
	ahead func() bool

	// The holder's.
	ctx  context.Context // for reads: Serve's ctx, without its cancellation
	hctx context.Context // the handlers' parent
	// limiter enforces Options.Rate; nil: none.
	limiter *rate.Limiter
	// held: the reader holds the outbox's writes back (see readAhead);
	// heldNext: the next message is read already.
	held, heldNext bool
	// msgs is the decoding buffer, reused from frame to frame.
	msgs []message
	// lastMethod is the method name of the last single call read, whose
	// string the next call to the same method reuses (see frameText).
	lastMethod string
	// tail is the done channel of the last serial call started.
	tail chan struct{}
	// The reader's standing in Options.Share (see share.go): reads in a
	// row that did not wait, and whether it holds a turn.
	streak int
	turn   bool
	// own is the role's state for callers that read their own replies
	// (own.go); nil on a connection where they do not, which most
	// connections are: it is not paid for by every idle connection.
	own *ownRead
}

// readLoop reads and dispatches messages until reading ends, when it
// closes readDone, or until the watchdog took the reader role from it, or
// it parked the role for a caller to read (see own.go).
//
// Its frame is kept small: an idle connection's reader parks at the end of
// a chain of frames (the HTTP server's, the transport's, the WebSocket
// library's) that fits in 8 KiB of stack, and a frame that pushed it past
// them would double the reader's stack on every idle connection.
// TestIdleCost fails then.
func (r *reader) readLoop() {
	c := r.c
	r.loops.Add(1)
	defer r.loops.Add(-1)
	// The replies a reader held back (see below) are written: its
	// predecessor lost the role in a handler, and may be in it still.
	c.out.holdWrites(false)
	r.held = false
	for {
		began := r.readStart()
		msg, err := c.t.Read(r.ctx)
		if err != nil {
			if interrupted(err) {
				continue // meant for a caller that held the role (own.go)
			}
			r.letGo() // before the connection closes
			c.readFailed(err)
			break
		}
		r.readEnd(began)
		c.reads.Add(1)
		if len(msg) > c.o.MaxMessage {
			r.letGo()
			c.limit(LimitMessage)
			c.teardown(&CloseError{Code: CloseTooBig, Reason: "message too big"}, CloseTooBig, "message too big")
			break
		}
		// With another message read already, the replies to this one
		// wait for that one's, to leave together.
		if r.ahead != nil {
			r.readAhead()
		}
		if !r.dispatch(r.hctx, msg) {
			return // another goroutine reads now
		}
		if r.own != nil && r.own.pass.p != nil {
			r.passOn()
			return // a caller reads next
		}
		if !r.heldNext {
			r.letGo()
		}
	}
	r.giveTurn()
	close(c.readDone)
}

// readAhead holds the queue (outbox.holdWrites) while the reader runs a
// message that another one, read already, follows: the replies to the
// messages of one read then leave together. It notes in r.heldNext
// whether the next message is there, for the reader to let go of the
// queue after this one otherwise.
func (r *reader) readAhead() {
	c := r.c
	r.heldNext = r.ahead()
	if r.heldNext && !r.held {
		r.held = true
		c.out.holdWrites(true)
	}
}

// letGo ends the reader's hold on the queue, if it holds it: what it
// held is written.
func (r *reader) letGo() {
	c := r.c
	if r.held {
		r.held = false
		c.out.holdWrites(false)
	}
}

// enter marks the reader as running a handler and returns the state to
// give exit. The connection goes on the watchdog's list if it is not on
// it.
func (r *reader) enter() state {
	s, _ := r.step(mEnter, 0)
	if s.watched() {
		return s
	}
	// Only the holder sets watched, and the watchdog clears it only while
	// the holder is not busy: it is ours to set.
	readerWatch.mu.Lock()
	s, _ = r.step(mWatch, 0)
	r.watchSeq = ^uint64(0)
	readerWatch.conns = append(readerWatch.conns, r.c)
	if !readerWatch.running {
		readerWatch.running = true
		go watchReaders()
	}
	readerWatch.mu.Unlock()
	return s
}

// exit marks the reader as done with the handler it entered with state s,
// and reports whether it still holds the reader role.
func (r *reader) exit(s state) bool {
	_, ok := r.step(mExit, s)
	return ok
}

// watchReaders is the watchdog goroutine. It ends after readerLinger
// without a connection to watch.
func watchReaders() {
	t := time.NewTimer(readerLook)
	defer t.Stop()
	var empty time.Duration
	for range t.C {
		readerWatch.mu.Lock()
		conns := readerWatch.conns[:0]
		busy := false
		for _, c := range readerWatch.conns {
			keep, inHandler := c.role.look()
			if keep {
				conns = append(conns, c)
			}
			busy = busy || inHandler
		}
		clear(readerWatch.conns[len(conns):])
		readerWatch.conns = conns
		next := readerLook
		if busy {
			next = readerTick
		}
		if len(conns) > 0 {
			empty = 0
		} else if empty += next; empty >= readerLinger {
			readerWatch.running = false
			readerWatch.mu.Unlock()
			return
		}
		readerWatch.mu.Unlock()
		t.Reset(next)
	}
}

// look is the watchdog's look at one connection's reader, with
// readerWatch.mu held: it starts a new reader if the reader has been in
// the same handler since the previous look. It reports whether the
// connection stays on the list (not when it ran no handler since), and
// whether its reader is in a handler the watchdog had not seen yet, to
// look at again soon.
func (r *reader) look() (keep, inHandler bool) {
	s := state(r.state.Load())
	if s.seq() != r.watchSeq {
		r.watchSeq = s.seq()
		return true, s.busy()
	}
	if !s.busy() {
		// No handler on the reader since the previous look: if the reading
		// moved off a slow handler then, the calls that came meanwhile
		// went to workers; from now on they start on the reader again. A
		// connection whose handlers are quick must not stay on the slow
		// path for as long as it has calls running, which under a steady
		// load is for ever.
		r.spawning.Store(false)
		_, unwatched := r.step(mUnwatch, s)
		return !unwatched, false
	}
	if r.move(s) {
		r.spawning.Store(true)
	}
	return true, false
}

// move takes the reader role from a reader in a handler, if it is still
// in the handler it was in with state s, and starts a new reader. It
// reports whether it did.
func (r *reader) move(s state) bool {
	if _, ok := r.step(mSteal, s); !ok {
		return false
	}
	// The reader is in a batch if it set batch: the batch's calls not yet
	// started no longer wait for the slow one. The batch is taken before
	// the new reader starts, which may set it again.
	if b := r.batch.Swap(nil); b != nil {
		b.spread()
	}
	// The role is taken from a reader in a handler: reading has not
	// ended, so Serve does not wait for c.wg yet.
	c := r.c
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		r.readLoop() // the role, and its state, pass to this goroutine
	}()
	return true
}

// leaveReader is called (by Conn.lend) for a handler about to wait on a
// call it made (to its own caller, to another peer, or forwarded): if the
// handler runs on its connection's reader, the reading moves to a new
// goroutine at once, instead of a tick or two later by the watchdog. A
// handler that calls back to its caller would otherwise wait that long
// for the reader to read the answer.
//
// The handler may have returned already (a goroutine it started waits
// with its context): move then finds the reader in another state and
// does nothing, unless the reader is still where the handler left it
// (writing its reply, or running the rest of its batch), which then
// loses the reading as it would to the watchdog.
func (ri *reqInfo) leaveReader() {
	if ri.reader != 0 {
		ri.c.role.move(ri.reader)
	}
}
