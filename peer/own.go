package peer

import (
	"context"
	"errors"
	"time"
)

// This file lets a caller read its own reply (Options.CallerReads).
//
// A reply read by the reader goroutine must be handed to its caller,
// and on a client making calls one after another, that hand-off is the
// largest cost of a call after the network's: a goroutine readied, a
// wake through the poller (wake.go) and a switch, a third of a call's
// time on a 2-core machine. So the reader role can pass to a caller. When
// the reader delivers the reply of the only call pending to a caller that
// waits alone (on the poll waker), it hands the caller the role with the
// reply and stops. The caller then parks the role as it returns: nobody
// reads. The next call takes the parked role, writes its request and
// reads until its reply is there, delivering whatever else comes in, and
// parks the role again. A run of calls made one after another then costs
// what raw frames cost: the goroutine that writes a request reads the
// reply.
//
// Nobody reads while the role is parked, so it is parked for parkTime at
// most: then a timer gives it to a new reader goroutine, and a message
// that came meanwhile (an event, a call from the other side) waits that
// long at most. A caller gives the role to a reader goroutine at once
// when another call is still pending (someone must read its reply), when
// it reads a message that is not a reply (requests and notifications run
// on the reader, never on a caller's goroutine), and when its context
// ends: its read is then interrupted between two messages (see
// GatherConn.Read), which is why the role passes only over a transport
// that can do that. Batch and Ping, which wait for a message but read
// none, give a parked role to a reader goroutine first.

// Reader role states (Conn.role).
const (
	roleReader = iota // a reader goroutine (readLoop) holds the role
	roleCaller        // a caller holds it (own.go)
	roleParked        // nobody holds it: nobody reads
)

// parkTime is the longest the reader role stays parked: how long a
// message that is not a reply may wait after a call, at most. A shorter
// one costs more: see endRole.
const parkTime = 2 * time.Millisecond

// passing is the reply the reader hands over with the role once the
// message it came in is done with (see readLoop).
type passing struct {
	id uint64
	p  *pendingCall
	r  reply
}

// mayPassLocked reports whether the reader may give the role with the
// reply to call p: when it is the only call pending and its caller waits
// alone. It runs on the reader, with c.mu held.
func (c *Conn) mayPassLocked(p *pendingCall) bool {
	return c.ownReads && p.solo && len(c.pending) == 0
}

// passRole gives the role to the caller of c.pass, with its reply. It
// runs on the reader, which stops reading.
func (c *Conn) passRole() {
	ps := c.pass
	c.pass = passing{}
	ps.r.role = true
	c.role.Store(roleCaller)
	c.hand(ps.id, ps.p, ps.r)
}

// takeRole takes the parked reader role for a caller.
func (c *Conn) takeRole() bool {
	return c.ownReads && c.role.Load() == roleParked && c.role.CompareAndSwap(roleParked, roleCaller)
}

// wantReader gives a parked role to a new reader goroutine: someone waits
// for a message that no caller will read.
func (c *Conn) wantReader() {
	if c.ownReads && c.role.Load() == roleParked && c.role.CompareAndSwap(roleParked, roleReader) {
		c.startReader(nil)
	}
}

// startReader starts a reader goroutine, which holds the role, and
// handles first before it reads, if there is a first.
func (c *Conn) startReader(first []byte) {
	c.role.Store(roleReader)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		if first != nil {
			c.readFrom(first)
		} else {
			c.readLoop()
		}
	}()
}

// endRole ends a caller's hold on the role: it parks it, unless a call
// is pending or the connection closed, which need a reader at once.
func (c *Conn) endRole() {
	c.role.Store(roleParked)
	// Checked once parked: a call registered before this either is seen
	// here or takes the parked role itself.
	c.mu.Lock()
	busy := len(c.pending) > 0 || c.closed
	c.mu.Unlock()
	if busy {
		c.wantReader()
		return
	}
	// The timer is pushed back once half its time has passed: under a
	// steady run of calls it never fires, and is reset twice per
	// parkTime, not at every call. (Firing costs a goroutine, and a reset
	// may make the runtime wake a thread for the network poller.) The
	// role thus stays parked for parkTime/2 to parkTime.
	if now := monotime(); c.parkUntil.Load()-now < int64(parkTime/2) {
		c.parkUntil.Store(now + int64(parkTime))
		c.parkTimer.Reset(parkTime)
	}
}

// unpark is the park timer's function: it gives a parked role to a
// reader goroutine. It finds the role taken if a caller took it since.
func (c *Conn) unpark() { c.wantReader() }

// readOwn reads, holding the reader role, until the reply of call id
// (p) is there, and returns it. It reports false when it gave up the role
// first, the reply still to come on p.ch: ctx ended, or a message came
// that a reader goroutine must handle.
func (c *Conn) readOwn(ctx context.Context, id uint64, p *pendingCall) (reply, bool) {
	c.watchCtx(ctx)
	p.reading.Store(true) // CallTimeout's expiry interrupts the read
	defer p.reading.Store(false)
	for {
		// The reply is on p.ch when the call expired or the connection
		// closed; the caller's own reading does not use it.
		if len(p.ch) != 0 {
			c.endRole()
			return <-p.ch, true
		}
		if ctx.Err() != nil {
			c.startReader(nil)
			return reply{}, false
		}
		msg, err := c.t.Read(c.rctx)
		switch {
		case errors.Is(err, errInterrupted):
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
		switch r, k := c.readReply(msg, id, p); k {
		case replyOwn:
			c.endRole()
			return r, true
		case replyNone:
			c.startReader(msg)
			return reply{}, false
		}
	}
}

// watchCtx makes sure that the end of ctx interrupts the read of the
// caller holding the role. The registration stays for the calls that
// follow with the same ctx (a service's calls often share one), instead of
// being made and undone for every call: any read it interrupts goes on,
// and Serve undoes it at the end. It runs on the role's holder.
func (c *Conn) watchCtx(ctx context.Context) {
	done := ctx.Done()
	if done == nil || done == c.watchDone {
		return
	}
	if c.watchStop != nil {
		c.watchStop()
	}
	c.watchDone, c.watchStop = done, context.AfterFunc(ctx, c.interruptFn)
}

// What readReply found.
const (
	replyNone  = iota // not a single response: a reader goroutine's
	replyOther        // a response for another call, delivered
	replyOwn          // the reply of the caller's own call, returned
)

// readReply delivers msg if it is a single response. The reply of call
// id (p) itself, if still pending, it returns instead of sending it on
// p.ch, which the caller would then take it from.
func (c *Conn) readReply(msg []byte, id uint64, p *pendingCall) (reply, int) {
	if len(msg) == 0 || msg[0] != '{' {
		return reply{}, replyNone
	}
	f, ok := parseFrame(c.msgs, msg, c.o.MaxBatch, c.o.MaxDepth)
	defer c.keepMsgs(f.msgs)
	if !ok || f.tooDeep || f.batch || !f.msgs[0].isResponse() {
		return reply{}, replyNone
	}
	m := &f.msgs[0]
	if got, ok := parseOurID(m.id); ok && got == id {
		c.mu.Lock()
		own := c.pending[id] == p
		if own {
			delete(c.pending, id)
		}
		c.mu.Unlock()
		if own {
			r := decodeReply(m)
			r.read = true
			return r, replyOwn
		}
	}
	c.deliver(m, false)
	return reply{}, replyOther
}

// interruptRead interrupts the read of a caller holding the role.
func (c *Conn) interruptRead() { c.t.(interrupter).interruptRead() }
