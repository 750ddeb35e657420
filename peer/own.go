package peer

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/switchboard-rpc/switchboard/internal/transport"
)

// This file lets a caller read its own reply, on a connection the client
// package dialed (see transport.Caps.Interrupt).
//
// A reply read by a reader goroutine must be handed to its caller, and on
// a client making calls one after another, that hand-off is the largest
// cost of a call after the network's: a goroutine readied, a wake through
// the poller (wake.go) and a switch. So the reader role (the *reader, and
// the right to read the connection) can pass to a caller. When the reader
// delivers the reply of the only call pending to a caller that waits alone
// (on the poll waker), it parks the role and stops: nobody reads. The next
// call takes the parked role (pendingCall.rd), writes its request and
// reads until its reply is there (await, readOwn), delivering whatever
// other replies come in, and parks the role again. A run of calls made one
// after another thus has one goroutine in it, as raw frames on one
// goroutine have.
//
// Nobody reads while the role is parked, so it is parked for parkTime at
// most: then a timer gives it to a new reader goroutine, and a message
// that came meanwhile (an event, a call from the other side) waits that
// long at most. The role goes to a reader goroutine at once when a call is
// still pending as it is parked (someone must read its reply), when
// someone waits that will not read (Batch, Forward, Ping, a call that
// found the role taken), when the connection closes, when the reading
// caller reads a message that is not a single response (requests and
// notifications run on a reader goroutine, never on an unrelated caller's),
// and when the reading caller's ctx ends or its CallTimeout passes. The
// last needs its read interrupted between two messages, which only the
// transport can do (transport.Conn.Interrupt).
//
// Who holds the role is in its state word (role.go): a reader goroutine,
// a caller, or nobody (parked). A parked role is taken by a move that
// finds it parked (mClaim, mWake), so one goroutine at a time takes it;
// whoever holds it hands it on by a move made last, having done with the
// *reader (mRead, mPark).

// parkTime is the longest the reader role stays parked: how long a
// message that is not a reply may wait after a call, at most. A shorter
// one costs more: see park.
const parkTime = 2 * time.Millisecond

// ownRead is the state of the reader role that only a connection whose
// callers read their own replies has (reader.own).
type ownRead struct {
	// The holder's: the reply the reader hands over as it parks the role,
	// and the ctx whose end interrupts the holder's read, with how to undo
	// that (see watch).
	pass      passing
	watchDone <-chan struct{}
	watchStop func() bool

	// Set once, by NewConn: the transport's interruptRead, and the timer
	// that ends a parking (see park), with when it fires as last reset
	// (monotime).
	interrupt func()
	timer     parkTimer
	until     atomic.Int64
}

// parkTimer gives a parked role to a reader goroutine when it fires:
// a *time.Timer whose function is Conn.unpark, or a test's stand-in that
// fires when the test says so.
type parkTimer interface{ Reset(d time.Duration) bool }

// newOwnRead returns the ownRead of c, whose transport's reads are
// interrupted by interrupt.
func newOwnRead(c *Conn, interrupt func()) *ownRead {
	t := time.AfterFunc(time.Hour, c.unpark)
	t.Stop()
	return &ownRead{interrupt: interrupt, timer: t}
}

// passing is the reply the reader hands over as it parks the role, once
// the message it came in is done with (see readLoop).
type passing struct {
	id uint64
	p  *pendingCall
	r  reply
}

// mayPassLocked reports whether the reader may park the role as it
// delivers the reply of call p: it is the only call pending and its caller
// waits alone. It runs on the reader, with c.mu held.
func (c *Conn) mayPassLocked(p *pendingCall) bool {
	return c.role.own != nil && p.solo && len(c.pending) == 0
}

// passOn parks the role and hands r.own.pass its reply. It runs on the
// reader, which stops reading.
func (r *reader) passOn() {
	c, ps := r.c, r.own.pass
	r.own.pass = passing{}
	r.park() // the last use of r
	c.hand(ps.id, ps.p, ps.r)
}

// takeRole returns the parked reader role for a caller to read with, or
// nil when it is not parked.
func (c *Conn) takeRole() *reader {
	if r := c.role; r.own != nil {
		if _, ok := r.step(mClaim, 0); ok {
			return r
		}
	}
	return nil
}

// wantReader gives a parked role to a new reader goroutine: someone waits
// for a message that no caller will read.
func (c *Conn) wantReader() {
	if r := c.role; r.own != nil {
		if _, ok := r.step(mWake, 0); ok {
			r.goRead(nil)
		}
	}
}

// wantReaderFor gives a parked role to a new reader goroutine if call id
// still waits for its reply, which nobody reads then. Its reply may be on
// its way already: the reader that delivered it parked the role first.
func (c *Conn) wantReaderFor(id uint64) {
	if r := c.role; r.own == nil || r.holder() != roleParked {
		return
	}
	c.mu.Lock()
	_, pending := c.pending[id]
	c.mu.Unlock()
	if pending {
		c.wantReader()
	}
}

// unpark is the park timer's function. It finds the role taken if a
// caller took it since.
func (c *Conn) unpark() { c.wantReader() }

// interrupt interrupts the read of the caller that holds the role, if
// one does: the read ends between two messages.
func (c *Conn) interrupt() { c.role.own.interrupt() }

// goRead starts a reader goroutine with the role, which a reader holds
// already (mWake, mRead), and which dispatches first before it reads, if
// there is a first.
func (r *reader) goRead(first []byte) {
	c := r.c
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		if first != nil {
			r.loops.Add(1)
			ok := r.dispatch(r.hctx, first)
			r.loops.Add(-1)
			switch {
			case !ok:
				return // another goroutine reads now
			case r.own.pass.p != nil:
				r.passOn()
				return
			}
		}
		r.readLoop()
	}()
}

// park ends its holder's hold on the role: nobody reads, unless a call is
// pending or the connection closed, which need a reader at once.
func (r *reader) park() {
	c := r.c
	r.step(mPark, 0)
	// Checked once parked: a call registered before this is seen here,
	// and one registered after sees the role parked (see await).
	c.mu.Lock()
	busy := len(c.pending) > 0 || c.closed
	c.mu.Unlock()
	if busy {
		c.wantReader()
		return
	}
	// The timer is pushed back once half its time has passed: under a
	// steady run of calls it never fires, and is reset twice per
	// parkTime, not at every call. (Firing costs a goroutine, and a
	// timer due within a millisecond or two, reset at every call, made
	// Go's runtime wake a thread for its network poller hundreds of times
	// a second: 3.5 µs of the client's CPU per call.) The role thus stays
	// parked for parkTime/2 to parkTime.
	if o, now := r.own, monotime(); o.until.Load()-now < int64(parkTime/2) {
		o.until.Store(now + int64(parkTime))
		o.timer.Reset(parkTime)
	}
}

// readOwn reads, holding the reader role, until the reply of call id (p)
// is there, and returns it, having parked the role. It reports false when
// it gave up the role first, the reply still to come on p.ch: ctx ended,
// or a message came that a reader goroutine must handle. It runs on the
// caller.
func (r *reader) readOwn(ctx context.Context, id uint64, p *pendingCall) (reply, bool) {
	c := r.c
	r.watch(ctx)
	p.reading.Store(true) // CallTimeout's expiry interrupts the read
	defer p.reading.Store(false)
	for {
		// The reply is on p.ch when the call expired or the connection
		// closed; the caller's own reading does not use it.
		if len(p.ch) != 0 {
			r.park()
			return <-p.ch, true
		}
		if ctx.Err() != nil {
			r.step(mRead, 0)
			r.goRead(nil)
			return reply{}, false
		}
		msg, err := c.t.Read(r.ctx)
		switch {
		case interrupted(err):
			continue
		case err != nil:
			c.readFailed(err)
			close(c.readDone)
			return <-p.ch, true // failed by the close
		}
		c.reads.Add(1)
		if len(msg) > c.o.MaxMessage {
			c.limit(LimitMessage)
			c.teardown(&CloseError{Code: CloseTooBig, Reason: "message too big"}, CloseTooBig, "message too big")
			close(c.readDone)
			return <-p.ch, true
		}
		switch rep, k := r.readReply(msg, id, p); k {
		case replyOwn:
			r.park()
			return rep, true
		case replyNone:
			r.step(mRead, 0)
			r.goRead(msg)
			return reply{}, false
		}
	}
}

// watch makes sure that the end of ctx interrupts the read of the caller
// holding the role. The registration stays for the calls that follow with
// the same ctx (a service's calls often share one), instead of being made
// and undone for every call: a read it interrupts goes on, and Serve undoes
// it at the end.
func (r *reader) watch(ctx context.Context) {
	o := r.own
	done := ctx.Done()
	if done == nil || done == o.watchDone {
		return
	}
	if o.watchStop != nil {
		o.watchStop()
	}
	o.watchDone, o.watchStop = done, context.AfterFunc(ctx, o.interrupt)
}

// interrupted reports whether err is that of a read interrupted for a
// caller holding the role, which a reader goroutine ignores. Not inlined,
// for readLoop's frame (see TestIdleCost).
//
//go:noinline
func interrupted(err error) bool { return errors.Is(err, transport.ErrInterrupted) }

// What readReply found.
const (
	replyNone  = iota // not a single response: a reader goroutine's
	replyOther        // a response for another call, delivered
	replyOwn          // the reply of the caller's own call, returned
)

// readReply delivers msg if it is a single response. The reply of call id
// (p) itself, if still pending, it returns instead of sending it on p.ch.
func (r *reader) readReply(msg []byte, id uint64, p *pendingCall) (reply, int) {
	c := r.c
	if len(msg) == 0 || msg[0] != '{' {
		return reply{}, replyNone
	}
	f, ok := parseFrame(r.msgs, msg, c.o.MaxBatch, c.o.MaxDepth)
	defer r.keepMsgs(f.msgs, nil)
	if !ok || f.tooDeep || f.batch {
		return reply{}, replyNone
	}
	m := &f.msgs[0]
	if !m.isResponse() && !c.answersPending(m) {
		return reply{}, replyNone
	}
	if got, ok := parseOurID(m.id); ok && got == id {
		c.mu.Lock()
		own := c.pending[id] == p
		if own {
			delete(c.pending, id)
		}
		c.mu.Unlock()
		if own {
			rep := decodeReply(m)
			rep.read = true
			return rep, replyOwn
		}
	}
	c.deliver(m, nil)
	return reply{}, replyOther
}
