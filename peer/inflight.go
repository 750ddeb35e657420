package peer

import "context"

// This file holds the accounting of the calls a Conn serves: in-flight
// slots, the handlers' contexts, and the reader's pauses.
//
// A call takes an in-flight slot before it starts (a batch takes one per
// call it runs at once), and the reader, which takes them, waits when
// MaxInFlight are taken: it reads nothing meanwhile, so the other side is
// slowed down by TCP rather than refused. A handler that calls back to
// its own caller and waits lends its slot back for the wait: its caller
// may have sent more calls ahead of the answer, and the reader must be
// able to read on to reach it.

// takeSlots waits until n more calls may run and takes n slots. It runs
// on the reader. It returns false, taking nothing, when the connection
// closes or starts draining first.
func (c *Conn) takeSlots(n int) bool {
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
		c.spawning.Store(false)
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

// finish ends a call that held one slot: it unregisters it and frees the
// slot, once its reply is queued.
func (c *Conn) finish(cl *call) {
	c.unregister(cl)
	c.freeSlots(1)
}

// register returns the context of the handler of cl, which holds a slot,
// and makes a call cancellable with rpc.cancel. It runs on the reader, or
// on a batch's worker for a batch element.
func (c *Conn) register(ctx context.Context, cl *call) context.Context {
	hctx, _ := c.registerInfo(ctx, cl)
	return hctx
}

// registerInfo is register, and also returns the request's information
// that the handler's context carries.
func (c *Conn) registerInfo(ctx context.Context, cl *call) (context.Context, *reqInfo) {
	ri := &reqInfo{Context: ctx, c: c, id: cl.req.ID, slot: true}
	var hctx context.Context = ri
	if cl.req.IsNotification() {
		return hctx, ri
	}
	hctx, cl.cancel = context.WithCancelCause(hctx)
	c.mu.Lock()
	if _, dup := c.inflight[cl.req.ID.raw]; !dup {
		c.inflight[cl.req.ID.raw] = cl // a duplicate id cannot be cancelled
	}
	c.mu.Unlock()
	return hctx, ri
}

// unregister undoes register once cl's reply is queued. It runs on the
// handler's worker.
func (c *Conn) unregister(cl *call) {
	if cl.cancel == nil {
		return
	}
	c.mu.Lock()
	if c.inflight[cl.req.ID.raw] == cl {
		delete(c.inflight, cl.req.ID.raw)
	}
	c.mu.Unlock()
	cl.cancel(nil)
}

// inlineContext is the context of an inline handler: no slot, and no
// cancellation of its own, since rpc.cancel cannot arrive while it runs.
func (c *Conn) inlineContext(ctx context.Context, cl *call) context.Context {
	return &reqInfo{Context: ctx, c: c, id: cl.req.ID}
}

// lend gives back the slot of the handler behind ctx, if it is one of this
// connection's and holds one, while it waits on a call to its caller, and
// returns the function that takes it back. At most MaxInFlight slots are
// lent at once; past that, a handler keeps its slot.
func (c *Conn) lend(ctx context.Context) (takeBack func()) {
	leaveReader(ctx)
	ri, ok := ctx.Value(ctxKey{}).(*reqInfo)
	if !ok || ri.c != c || !ri.slot {
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
			c.giveTurn() // see share.go
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
	c.mu.Unlock()
	for _, cl := range calls {
		cl.cancel(cause)
	}
}
