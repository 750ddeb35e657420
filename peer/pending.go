package peer

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// This file holds the calls this side made and waits for: the one path
// that Call, Batch and Forward take (addPending, send, await, abandon), the
// hand-over of a reply, and the CallTimeout of calls.

// pendingCall is a call made on this side and waiting for its reply.
type pendingCall struct {
	// to takes the call's outcome (see completion): the call itself,
	// whose caller waits on ch, or, for a call of Relay, its relayCall.
	to       completion
	ch       chan reply // the reply, sent once by complete
	progress func(json.RawMessage)
	// solo: the caller waits on the connection's poll waker, which whoever
	// sends on ch then tells the call's id (see wake.go).
	solo bool
	// rd: the caller holds the reader role, and reads its reply itself
	// (see own.go); reading: it reads now, and the call's expiry must
	// interrupt its read.
	rd      *reader
	reading atomic.Bool

	// A call of Conn.Call whose ctx has no deadline, when CallTimeout
	// bounds it, is its own context while it waits to be sent: it embeds
	// the caller's ctx, and ends (done is closed) when the connection's
	// timer expires it at deadline or when the caller's ctx ends.
	context.Context
	deadline int64         // on monotime's clock; 0: CallTimeout does not apply
	done     chan struct{} // made once per pendingCall, closed by end
	ended    atomic.Bool   // done is closed, or about to be: p is not reused
	err      error         // why done was closed; set before
	stop     func() bool   // unties done from the caller's ctx (see Done)
}

// reply is the outcome of a call.
type reply struct {
	result  []byte
	err     error
	read    bool // delivered by the reader, which is done with the call
	expired bool // the call's CallTimeout passed (see timeouts)
}

// completion takes the outcome of a pending call: every way a call
// ends (its reply read, its CallTimeout passed, the connection closed, its
// sending failed) goes through complete, once, called by whoever removed
// the call from Conn.pending (with Conn.mu held), after letting go of
// Conn.mu. A caller that stops waiting removes its own call instead
// (abandon), and takes nothing.
type completion interface {
	complete(c *Conn, id uint64, r reply)
}

// newPendingCall returns a pendingCall whose caller waits on its channel.
func newPendingCall() *pendingCall {
	p := &pendingCall{ch: make(chan reply, 1)}
	p.to = p
	return p
}

var pendingCalls = sync.Pool{New: func() any {
	p := newPendingCall()
	p.done = make(chan struct{})
	return p
}}

// getPendingCall returns a pendingCall with an empty channel, reused when
// possible: Call takes one per call.
func getPendingCall() *pendingCall { return pendingCalls.Get().(*pendingCall) }

// release ends Call's use of p, and gives it back for another call if
// reuse (its reply has been received, and nothing else refers to it) and
// done is still open.
func (p *pendingCall) release(reuse bool) {
	if p.stop != nil && !p.stop() {
		return // the caller's ctx has ended: done is closed, or about to be
	}
	if !reuse || p.ended.Load() {
		return
	}
	p.progress, p.Context, p.deadline, p.stop, p.solo = nil, nil, 0, nil, false
	pendingCalls.Put(p)
}

// Deadline, Done and Err make p the context of its call: see Call.
func (p *pendingCall) Deadline() (time.Time, bool) {
	return monoEpoch.Add(time.Duration(p.deadline)), true
}

// Done returns the channel closed when the call expires or the caller's
// ctx ends. Only a call that has to wait for room in the queue asks for
// it: tying it to the caller's ctx costs a registration, made then.
func (p *pendingCall) Done() <-chan struct{} {
	if p.stop == nil && p.Context.Done() != nil {
		p.stop = context.AfterFunc(p.Context, func() { p.end(p.Context.Err()) })
	}
	return p.done
}

func (p *pendingCall) Err() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// end closes done, once, for err.
func (p *pendingCall) end(err error) {
	if p.ended.CompareAndSwap(false, true) {
		p.err = err
		close(p.done)
	}
}

// hand ends call id (p) with r, once whoever holds p has removed it from
// Conn.pending and let go of Conn.mu.
func (c *Conn) hand(id uint64, p *pendingCall, r reply) { p.to.complete(c, id, r) }

// complete gives p's caller its reply r: on p's channel, and, if the
// caller waits on the poll waker, by the call's id there too (see
// wake.go). A call that expired ends its context too (see Done), and the
// read of a caller that reads its own reply (see own.go).
func (p *pendingCall) complete(c *Conn, id uint64, r reply) {
	solo := p.solo // p is the caller's again once sent
	interrupt := false
	if r.expired {
		p.end(context.DeadlineExceeded)
		interrupt = p.reading.Load()
	}
	p.ch <- r
	if solo {
		c.wk.notify(id)
	}
	if interrupt {
		c.interrupt()
	}
}

// monoEpoch is the origin of monotime.
var monoEpoch = time.Now()

// monotime returns the time on the monotonic clock, in nanoseconds since
// monoEpoch: a deadline that fits in an int64 and compares cheaply.
func monotime() int64 { return int64(time.Since(monoEpoch)) }

// timeouts enforces the CallTimeout of a connection's pending calls with
// one timer, armed for the earliest deadline among them, instead of a
// timer per call. Deadlines come from one CallTimeout and grow with time,
// so under a steady flow of calls the timer is armed once and fires once
// per CallTimeout, when the earliest call is due (or, more often, done).
// Its fields are guarded by Conn.mu.
type timeouts struct {
	timer *time.Timer
	at    int64 // the deadline the timer is armed for; 0: not armed
}

// addLocked makes sure the timer fires by deadline.
func (t *timeouts) addLocked(c *Conn, deadline int64) {
	if t.at != 0 && t.at <= deadline {
		return
	}
	t.at = deadline
	d := time.Duration(deadline - monotime())
	if t.timer == nil {
		t.timer = time.AfterFunc(d, c.expireCalls)
	} else {
		t.timer.Reset(d)
	}
}

// stop stops the timer of a closing connection, with Conn.mu held.
func (t *timeouts) stop() {
	if t.timer != nil {
		t.timer.Stop()
	}
	t.at = 0
}

// expireCalls is the timer's function: it ends the pending calls whose
// deadline has passed and arms the timer for the earliest one left.
func (c *Conn) expireCalls() {
	type expired struct {
		id uint64
		p  *pendingCall
	}
	var due []expired
	c.mu.Lock()
	c.timeouts.at = 0
	if c.closed {
		c.mu.Unlock()
		return
	}
	now := monotime()
	var next int64
	for id, p := range c.pending {
		switch {
		case p.deadline == 0:
		case p.deadline <= now:
			delete(c.pending, id)
			due = append(due, expired{id, p})
		case next == 0 || p.deadline < next:
			next = p.deadline
		}
	}
	if next != 0 {
		c.timeouts.addLocked(c, next)
	}
	c.mu.Unlock()
	for _, e := range due {
		c.hand(e.id, e.p, reply{expired: true})
	}
}

// addPending makes p a pending call under a new id, unless the connection
// has closed (its cause) or, for a forwarded call, is shutting down
// (-32005): [Conn.Shutdown] waits for the forwarded calls it counts.
func (c *Conn) addPending(p *pendingCall, forward bool) (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.closed:
		return 0, c.cause
	case forward && c.draining:
		return 0, errShuttingDown()
	}
	c.nextID++
	c.pending[c.nextID] = p
	if p.deadline != 0 {
		c.timeouts.addLocked(c, p.deadline)
	}
	if forward {
		c.forwards++
	}
	return c.nextID, nil
}

// await waits for the reply of call id (p), and reports false if ctx
// ended first: the call is still pending then, for the caller to abandon
// or to go on waiting for. A ctx that never ends waits for the reply, or
// for the connection's end or the call's CallTimeout, which both send
// one. A caller that holds the reader role (p.rd) reads the reply itself,
// and gives the role up in any case (see own.go).
func (c *Conn) await(ctx context.Context, id uint64, p *pendingCall) (reply, bool) {
	if rd := p.rd; rd != nil {
		p.rd = nil
		if r, ok := rd.readOwn(ctx, id, p); ok {
			return r, true
		}
		// The role went to a reader goroutine before the reply came.
	} else {
		c.wantReaderFor(id) // the role may have been parked as p was added
	}
	if p.solo {
		switch err := c.wk.wait(ctx, id); {
		case err == nil:
			return <-p.ch, true
		case ctx.Err() != nil:
			return reply{}, false
		}
		// The pipe closed with the connection, which sends the reply
		// on p.ch.
	}
	select {
	case r := <-p.ch:
		return r, true
	case <-ctx.Done():
		return reply{}, false
	}
}

// abandon forgets call id (p), whose caller stops waiting for it. If it
// was still pending, the other side is told to stop working on it, if
// cancel (a call that was sent), and abandon reports false; else its
// reply, delivered meanwhile, is returned.
func (c *Conn) abandon(id uint64, p *pendingCall, cancel bool) (reply, bool) {
	pending := c.forget(id)
	if rd := p.rd; rd != nil {
		p.rd = nil
		rd.park() // the call was not sent: its caller reads nothing
	}
	if pending {
		if cancel {
			c.cancelRemote(id)
		}
		return reply{}, false
	}
	if p.solo {
		c.wk.drain(id) // the reply's wake is on its way
	}
	return <-p.ch, true
}

// forget removes a pending call and reports whether it was still pending.
func (c *Conn) forget(id uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.pending[id]
	delete(c.pending, id)
	return ok
}

// cancelRemote tells the other side to stop working on call id. It does
// not wait, even for room: the caller has given up already.
func (c *Conn) cancelRemote(id uint64) {
	params := strconv.AppendUint([]byte(`{"id":`), id, 10)
	c.out.push(appendRequest(nil, nil, "rpc.cancel", append(params, '}')))
}
