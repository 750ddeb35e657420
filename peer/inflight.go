package peer

import (
	"context"
	"sync"
	"sync/atomic"
)

// This file holds the accounting of the calls a Conn serves: in-flight
// slots, the handlers' contexts, and the reader's pauses.
//
// A call takes an in-flight slot before it starts (a batch takes one per
// call it runs at once), and the reader, which takes them, waits when
// MaxInFlight are taken, or when the outbound queue is full in bytes (the
// replies made already are not being read): it reads nothing meanwhile,
// so the other side is slowed down by TCP rather than refused. A handler that calls back to
// its own caller and waits lends its slot back for the wait: its caller
// may have sent more calls ahead of the answer, and the reader must be
// able to read on to reach it.

// takeSlots waits until n more calls may run and takes n slots. It runs
// on the reader. It returns false, taking nothing, when the connection
// closes or starts draining first.
func (c *Conn) takeSlots(n int) bool {
	if c.out.full() {
		// The replies already made are not being read: no new call
		// until they move (see outbox).
		if c.out.waitRoom() != nil {
			return false
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for !c.closed && !c.draining && c.running+n > c.o.MaxInFlight {
		if c.slotFreed == nil {
			c.slotFreed = make(chan struct{})
		}
		freed := c.slotFreed
		c.mu.Unlock()
		c.pause(true)
		<-freed
		c.pause(false)
		c.mu.Lock()
	}
	if c.closed || c.draining {
		return false
	}
	c.running += n
	return true
}

// freeSlots gives back n slots. It runs on the worker that held them.
func (c *Conn) freeSlots(n int) {
	c.mu.Lock()
	c.running -= n
	if c.running == 0 {
		c.role.spawning.Store(false)
	}
	c.wakeLocked()
	c.checkIdleLocked()
	c.mu.Unlock()
}

// wakeLocked wakes a reader waiting for a slot.
func (c *Conn) wakeLocked() {
	if c.slotFreed != nil {
		close(c.slotFreed)
		c.slotFreed = nil
	}
}

// finish ends a call that held one slot and sends its reply, if any. The
// call is unregistered before its reply is queued, as its id is free for
// the other side to use again from the moment the reply can reach it (an
// rpc.cancel for a new call with that id must not find this one); the
// slot is freed after, so that a reply waiting for room still holds it.
func (c *Conn) finish(cl *call, reply []byte) { c.finishReserved(cl, reply, 0) }

// finishReserved is finish for a call that reserved n bytes of room for
// its reply (outbox.reserve).
func (c *Conn) finishReserved(cl *call, reply []byte, n int64) {
	c.unregister(cl)
	if reply != nil {
		_ = c.out.sendReserved(c.life, reply, nil, true, n) // fails only once closed
	} else {
		c.out.unreserve(n)
	}
	c.freeSlots(1)
}

// register makes cl, which holds a slot, cancellable with rpc.cancel
// and returns its handler's context. It runs on the reader.
func (c *Conn) register(ctx context.Context, cl *call) *handlerCtx {
	cl.ctx.init(ctx, c, &cl.req, true)
	if cl.req.IsNotification() {
		return &cl.ctx
	}
	c.mu.Lock()
	if _, dup := c.inflight[cl.req.ID.raw]; !dup {
		c.inflight[cl.req.ID.raw] = cl // a duplicate id cannot be cancelled
	}
	c.mu.Unlock()
	return &cl.ctx
}

// unregister undoes register once cl's handler has returned, and ends
// its context. It runs on the handler's goroutine.
func (c *Conn) unregister(cl *call) {
	if !cl.req.IsNotification() {
		c.mu.Lock()
		if c.inflight[cl.req.ID.raw] == cl {
			delete(c.inflight, cl.req.ID.raw)
		}
		c.mu.Unlock()
	}
	cl.ctx.end()
}

// inlineContext is the context of an inline handler: no slot, and no
// one to cancel it with rpc.cancel, which cannot arrive while it runs.
func (c *Conn) inlineContext(ctx context.Context, cl *call) *handlerCtx {
	cl.ctx.init(ctx, c, &cl.req, false)
	return &cl.ctx
}

// lend gives back the slot of the handler behind ctx, if it is one of this
// connection's and holds one, while it waits on a call to its caller, and
// returns the function that takes it back. At most MaxInFlight slots are
// lent at once; past that, a handler keeps its slot.
func (c *Conn) lend(ctx context.Context) (takeBack func()) {
	ri, ok := ctx.Value(ctxKey{}).(*reqInfo)
	if !ok {
		return func() {}
	}
	ri.leaveReader()
	if ri.c != c || !ri.slot {
		return func() {}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lent >= c.o.MaxInFlight {
		return func() {}
	}
	c.lent++
	c.running--
	c.wakeLocked()
	return func() {
		c.mu.Lock()
		c.lent--
		c.running++ // at once: the handler runs already
		c.mu.Unlock()
	}
}

// pause records that the reader waits (for a slot, or for room for its
// replies) and so reads nothing, for Ping, and gives back its turn of
// the Share for the wait.
func (c *Conn) pause(waiting bool) {
	if waiting {
		c.pauses.Add(1)
		if c.o.Share != nil {
			c.role.giveTurn() // see share.go; pause runs on the reader
		}
	}
	c.paused.Store(waiting)
}

// cancelAll cancels every handler serving a call, with cause, as
// Shutdown does at the end of its grace period.
func (c *Conn) cancelAll(cause error) {
	c.mu.Lock()
	calls := make([]*call, 0, len(c.inflight))
	for _, cl := range c.inflight {
		calls = append(calls, cl)
	}
	for _, b := range c.batches {
		for i := range b.calls {
			if cl := &b.calls[i]; cl.mode != Inline {
				calls = append(calls, cl)
			}
		}
	}
	c.mu.Unlock()
	for _, cl := range calls {
		cl.ctx.cancel(cause)
	}
}

// handlerCtx is the context of a handler serving a call of a Conn: its
// request's information (what ConnFromContext and Progress find), and a
// cancellation of its own, by rpc.cancel, by Shutdown at the end of its
// grace period, and when the handler returns.
//
// The cancellation is made only when something asks for it: a handler
// that looks at Done (or derives a context) or a cancel. Until then the
// context is its parent's, plus a state word. A quick handler, which
// never waits, so never looks at Done, costs no cancellable context and
// no registration with the parent's; in a batch of quick calls, that was
// a tenth of the time per element.
//
// Once made, the cancellation is a context of the context package, so
// that context.Cause and the contexts a handler derives from this one
// see it as usual (Value finds it for them).
type handlerCtx struct {
	reqInfo // its Context is the parent
	state   atomic.Int32
	mu      sync.Mutex                  // makes scope
	scope   atomic.Pointer[cancelScope] // the cancellation, once made
}

// cancelScope is the cancellation of a handlerCtx, once made.
type cancelScope struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// handlerCtx states.
const (
	hcLive   = iota // the handler may run or runs; no scope yet
	hcScoped        // the handler may run or runs; scope made
	hcDone          // the handler returned (or was answered without running)
)

// init sets the request's information. It is called before the context
// is shared: by the reader, before the handler can run or be cancelled.
func (h *handlerCtx) init(parent context.Context, c *Conn, req *Request, slot bool) {
	h.Context, h.c, h.req, h.slot = parent, c, req, slot
}

// Value returns the request's information for ctxKey and otherwise the
// scope's values (the scope itself for the context package's key), or the
// parent's while there is no scope.
func (h *handlerCtx) Value(key any) any {
	if _, ok := key.(ctxKey); ok {
		return &h.reqInfo
	}
	if s := h.scope.Load(); s != nil {
		return s.ctx.Value(key)
	}
	return h.Context.Value(key)
}

// Done makes the scope if there is none yet.
func (h *handlerCtx) Done() <-chan struct{} { return h.scoped().ctx.Done() }

// Err is the scope's, or else the parent's while the handler runs, or
// context.Canceled once it returned (Done, asked then, is closed).
func (h *handlerCtx) Err() error {
	if s := h.scope.Load(); s != nil {
		return s.ctx.Err()
	}
	if h.state.Load() == hcDone {
		return context.Canceled
	}
	return h.Context.Err()
}

// scoped returns the scope, making it if need be. A scope made after the
// handler returned is cancelled at once.
func (h *handlerCtx) scoped() *cancelScope {
	if s := h.scope.Load(); s != nil {
		return s
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.scope.Load(); s != nil {
		return s
	}
	ctx, cancel := context.WithCancelCause(h.Context)
	if !h.state.CompareAndSwap(hcLive, hcScoped) {
		cancel(nil) // the handler returned: nothing is to wait on it
	}
	s := &cancelScope{ctx, cancel}
	h.scope.Store(s) // after the cancel: a scope seen after end is done
	return s
}

// cancel cancels the handler's context with cause, unless it returned.
func (h *handlerCtx) cancel(cause error) {
	if h.state.Load() != hcDone {
		h.scoped().cancel(cause)
	}
}

// cancelled reports whether the context was cancelled (by rpc.cancel or
// Shutdown) before the handler started, which then need not run.
func (h *handlerCtx) cancelled() bool {
	s := h.scope.Load()
	return s != nil && s.ctx.Err() != nil
}

// end marks the handler as returned and cancels its scope, if it has one,
// which frees it from its parent.
func (h *handlerCtx) end() {
	if h.state.CompareAndSwap(hcLive, hcDone) {
		return // no scope: nothing holds on to this context
	}
	h.mu.Lock()
	h.state.Store(hcDone)
	s := h.scope.Load()
	h.mu.Unlock()
	s.cancel(nil)
}
