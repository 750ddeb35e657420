package peer

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"

	"go.uber.org/zap"
)

// This file holds the serving side of a Conn: what the reader does with
// each message it reads, and the handlers it starts.

// dispatch handles one incoming message or batch. It runs on the reader
// goroutine. It waits only for the connection's own limits: for room in
// the outbound queue for its immediate replies, and for in-flight slots
// for the calls it starts (backpressure: meanwhile, nothing more is read).
// Concurrent handlers of single calls and batches run on the reader (see
// reader.go), serial ones on workers. It reports whether the caller still
// holds the reader role.
func (r *reader) dispatch(ctx context.Context, frame []byte) bool {
	c := r.c
	buf := r.msgs
	var pooled *[]message // where buf came from, if from batchMsgs
	if len(frame) > 0 && frame[0] == '[' {
		if p, ok := batchMsgs.Get().(*[]message); ok {
			buf, pooled = *p, p
		}
	}
	f, ok := parseFrame(buf, frame, c.o.MaxBatch, c.o.MaxDepth)
	kept := false
	defer func() {
		if !kept {
			r.keepMsgs(f.msgs, pooled)
		}
	}()
	switch {
	case f.tooDeep:
		c.limit(LimitDepth)
		c.post(appendError(nil, nullJSON, errTooDeep(c.o.MaxDepth)))
		return true
	case !ok:
		c.post(appendError(nil, nullJSON, errParse()))
		return true
	case !f.batch:
		m := &f.msgs[0]
		if m.isResponse() || c.answersPending(m) {
			var pass *passing
			if r.own != nil {
				pass = &r.own.pass
			}
			c.deliver(m, pass)
			return true
		}
		call, reply := r.prepare(m, frameText{last: &r.lastMethod}, nil)
		// The message is done with: its buffer goes back to the reader
		// now, since start may run a handler past the moment this
		// goroutine stops being the reader.
		r.keepMsgs(f.msgs, pooled)
		kept = true
		if reply != nil {
			c.post(reply)
		}
		if call != nil {
			return r.start(ctx, call)
		}
		return true
	case f.tooBig:
		c.limit(LimitBatch)
		fallthrough
	case len(f.msgs) == 0:
		c.post(appendError(nil, nullJSON, errInvalidRequest()))
		return true
	}
	batchIDs(f.msgs)
	t := frameText{cache: new(lookup), last: &r.lastMethod}
	b := newBatch(ctx, &c.o, c, len(f.msgs), len(frame))
	for i := range f.msgs {
		m := &f.msgs[i]
		if m.isResponse() || c.answersPending(m) {
			c.deliver(m, nil)
			continue
		}
		cl, reply := r.prepare(m, t, b.slot())
		switch {
		case cl == nil:
			b.unslot()
			b.add(reply)
		case cl.mode == Inline:
			// Inline elements run here, in order, like single messages.
			b.runInline(c.inlineContext(ctx, cl), cl)
			cl.ctx.end()
		default:
			cl.ctx.init(ctx, c, &cl.req, true)
			b.pending++
		}
	}
	// As for a single call, the messages are done with.
	r.keepMsgs(f.msgs, pooled)
	kept = true
	if b.pending > 0 {
		return r.startBatch(b)
	}
	if out := b.reply(); out != nil {
		c.post(out)
	}
	return true
}

// keepMsgs keeps the array of msgs, emptied so that it holds on to no
// frame, for the reader's next frame when it is small, else for the next
// batch of any connection. pooled is the pointer batchMsgs gave the
// array's first version in, if it did: it takes the array back, so that
// a batch costs no new pointer to put its array in the pool.
func (r *reader) keepMsgs(msgs []message, pooled *[]message) {
	clear(msgs)
	if cap(msgs) <= keptMsgs {
		r.msgs = msgs[:0]
		return
	}
	if pooled == nil {
		pooled = new([]message)
	}
	*pooled = msgs[:0]
	batchMsgs.Put(pooled)
}

// keptMsgs is the most decoded messages whose room a reader keeps from one
// frame to the next (a message is 160 bytes). The arrays of larger batches
// are shared by all connections, through batchMsgs: a connection that
// once sent a batch of a thousand does not keep 160 KB for its life.
const keptMsgs = 16

// batchMsgs holds *[]message arrays of more than keptMsgs messages, for
// the batches of every connection.
var batchMsgs sync.Pool

// startBatch runs the calls of a batch once it has its in-flight slots,
// which the reader waits for: as many as it runs calls at once. The batch
// runs on the reader, as a concurrent single call does, unless it takes
// long: then the watchdog starts another reader and startBatch reports
// that the caller no longer holds the reader role. While the connection
// has slow handlers (see start), a batch runs on a worker. While it runs,
// its calls can be cancelled with rpc.cancel (see batchCall).
func (r *reader) startBatch(b *batch) bool {
	c := r.c
	n := min(b.pending, c.o.BatchWorkers, c.o.MaxInFlight)
	if !c.takeSlots(n) {
		for i := range b.calls {
			if cl := &b.calls[i]; cl.mode != Inline {
				b.add(c.refusal(cl))
			}
		}
		if out := b.reply(); out != nil {
			c.post(out)
		}
		return true
	}
	c.mu.Lock()
	c.batches = append(c.batches, b)
	c.mu.Unlock()
	if r.spawning.Load() {
		c.pool.spawn(func() { c.serveBatch(b, n) })
		return true
	}
	// r.batch is set before the reader enters the batch: while the
	// reader is in it, the watchdog finds the batch there (see move).
	r.batch.Store(b)
	b.reader = r.enter()
	c.serveBatch(b, n)
	if !r.exit(b.reader) {
		return false // move took r.batch with the role
	}
	r.batch.Store(nil)
	return true
}

// serveBatch runs a batch that holds n slots and sends its replies.
func (c *Conn) serveBatch(b *batch, n int) {
	b.run()
	c.mu.Lock()
	i := slices.Index(c.batches, b)
	c.batches = slices.Delete(c.batches, i, i+1)
	c.mu.Unlock()
	if out := b.reply(); out != nil {
		c.reply(out)
	}
	c.freeSlots(n)
}

// batchCall returns a call of a running batch with the given id that has
// not returned yet, or nil. It runs with c.mu held. A batch's calls are
// found by a search, when rpc.cancel comes, rather than each put in
// c.inflight as it starts: cancelling is rare, and a batch of quick calls
// then costs one registration, not one per call.
func (c *Conn) batchCall(id []byte) *call {
	for _, b := range c.batches {
		for i := range b.calls {
			cl := &b.calls[i]
			if cl.mode != Inline && cl.req.ID.raw == string(id) && cl.ctx.state.Load() != hcDone {
				return cl
			}
		}
	}
	return nil
}

// prepare applies the rate limit, handles the system methods that need
// this connection, then validates and routes like the package-level
// prepare. While the connection drains, calls are refused with -32005.
// It runs on the reader.
func (r *reader) prepare(m *message, t frameText, cl *call) (*call, []byte) {
	c := r.c
	if r.limiter != nil && !r.limiter.Allow() {
		c.limit(LimitRate)
		if !m.hasID {
			return nil, nil
		}
		return nil, appendError(nil, m.replyID(), errRateLimited())
	}
	if m.validRequest() {
		cancel := keyIs(m.method, "rpc.cancel")
		if cancel || keyIs(m.method, "rpc.progress") {
			var p progressParams
			if json.Unmarshal(m.params, &p) == nil {
				if cancel {
					c.cancelInflight(p.ID)
				} else {
					c.progress(p)
				}
			}
			if m.hasID {
				return nil, appendResult(nil, m.id, emptyObject)
			}
			return nil, nil
		}
	}
	cl, reply := prepare(&c.o, m, t, cl)
	if cl != nil && c.drainingFlag.Load() {
		return nil, c.refusal(cl)
	}
	return cl, reply
}

// refusal is the answer to a call that will not run because the
// connection drains (-32005), or nil for a notification or when the
// connection has closed.
func (c *Conn) refusal(cl *call) []byte {
	if cl.req.IsNotification() || !c.drainingFlag.Load() {
		c.o.Logger.Debug("request dropped: connection closing", zap.String("method", cl.req.Method))
		return nil
	}
	return appendError(nil, []byte(cl.req.ID.raw), errShuttingDown())
}

// limit reports a message over a limit to Options.OnLimit.
func (c *Conn) limit(l Limit) {
	if c.o.OnLimit != nil {
		c.o.OnLimit(l)
	}
}

// cancelInflight cancels the handler serving the call with the given id.
// It runs on the reader.
func (c *Conn) cancelInflight(id json.RawMessage) {
	if !isIDValue(id) {
		return
	}
	c.mu.Lock()
	cl := c.inflight[string(id)]
	if cl == nil {
		cl = c.batchCall(id)
	}
	c.mu.Unlock()
	if cl != nil {
		cl.ctx.cancel(errCancelled)
	}
}

// progress hands rpc.progress data to the call it belongs to. The
// callback is the caller's code running on the reader: a panic in it is
// recovered and logged, so it cannot take the connection down.
func (c *Conn) progress(p progressParams) {
	id, ok := parseOurID(p.ID)
	if !ok {
		return
	}
	c.mu.Lock()
	pc := c.pending[id]
	c.mu.Unlock()
	if pc == nil || pc.progress == nil {
		return
	}
	defer func() {
		if v := recover(); v != nil {
			c.o.Logger.Error("progress callback panicked", zap.Any("panic", v), zap.Stack("stack"))
		}
	}()
	pc.progress(p.Data)
}

// start runs one call once it has an in-flight slot, which the reader
// waits for. Inline handlers run on the reader, without a slot; so do
// concurrent ones, with a slot, unless they take long: then the watchdog
// starts another reader (see reader.go) and start reports that the
// caller no longer holds the reader role. From then on, until no call is
// left running, concurrent calls run on workers: the connection has slow
// handlers, and each would otherwise hold up the next call by a tick. A serial call runs on a worker,
// which first waits for the call ahead of it.
func (r *reader) start(ctx context.Context, cl *call) bool {
	c := r.c
	if cl.mode == Inline {
		out, _ := run(c.inlineContext(ctx, cl), &c.o, cl, nil, c.o.now())
		cl.ctx.end()
		if out != nil {
			c.post(out)
		}
		return true
	}
	if !c.takeSlots(1) {
		if out := c.refusal(cl); out != nil {
			c.post(out)
		}
		return true
	}
	hctx := c.register(ctx, cl)
	if cl.mode == Concurrent && r.spawning.Load() {
		hctx.cl = cl
		c.pool.spawn(func() {
			n := c.out.reserve()
			out, _ := run(hctx, &c.o, cl, nil, c.o.now())
			if hctx.relayed { // Relay answers it
				c.out.unreserve(n)
				return
			}
			c.finishReserved(cl, out, n)
		})
		return true
	}
	if cl.mode != Serial {
		hctx.cl = cl
		s := r.enter()
		hctx.reader = s
		out, _ := run(hctx, &c.o, cl, nil, c.o.now())
		if !hctx.relayed { // else Relay answers it
			c.finish(cl, out)
		}
		return r.exit(s)
	}
	done := make(chan struct{})
	wait := r.tail
	r.tail = done // r.tail belongs to the reader
	c.pool.spawn(func() {
		defer close(done)
		if wait != nil {
			select {
			case <-wait:
			case <-hctx.Done():
				// Cancelled while waiting its turn: answer without
				// running, but hold the line, so that the call behind
				// this one still starts only after the one ahead.
				var out []byte
				if !cl.req.IsNotification() {
					out = appendError(nil, []byte(cl.req.ID.raw), ToError(hctx.Err()))
				}
				c.finish(cl, out)
				<-wait
				return
			}
		}
		out, _ := run(hctx, &c.o, cl, nil, c.o.now())
		c.finish(cl, out)
	})
	return true
}

// deliver hands a response to the call waiting for it. Responses to
// unknown ids (a call that timed out, say) are dropped. It runs on the
// reader. With pass, the reader may keep the reply in *pass instead, to
// hand it over as it parks the reader role (see own.go).
func (c *Conn) deliver(m *message, pass *passing) {
	id, ok := parseOurID(m.id)
	if !ok {
		c.o.Logger.Debug("response with unknown id dropped", zap.ByteString("id", m.id))
		return
	}
	c.mu.Lock()
	p := c.pending[id]
	delete(c.pending, id)
	passes := pass != nil && p != nil && c.mayPassLocked(p)
	c.mu.Unlock()
	if p == nil {
		c.o.Logger.Debug("response with unknown id dropped", zap.ByteString("id", m.id))
		return
	}
	r := decodeReply(m)
	r.read = true
	if passes {
		*pass = passing{id: id, p: p, r: r}
		return
	}
	c.hand(id, p, r)
}

// answersPending reports whether m, which is neither a request nor a
// response, has the id of a call of ours waiting for its answer: it is
// then that call's answer, a malformed one (neither result nor error),
// which the call gets as an error at once rather than waiting for one
// that will not come.
func (c *Conn) answersPending(m *message) bool {
	if m.method != nil || !m.hasID {
		return false
	}
	id, ok := parseOurID(m.id)
	if !ok {
		return false
	}
	c.mu.Lock()
	_, pending := c.pending[id]
	c.mu.Unlock()
	return pending
}

func decodeReply(m *message) reply {
	switch {
	case !m.version || (m.result != nil) == (m.err != nil):
		return reply{err: errors.New("peer: invalid response")}
	case m.err != nil:
		e := new(Error)
		if err := json.Unmarshal(m.err, e); err != nil || e.Message == "" && e.Code == 0 {
			return reply{err: errors.New("peer: invalid error object in response")}
		}
		return reply{err: e}
	}
	return reply{result: m.result}
}

// parseOurID reads an id this side generated: a positive decimal integer.
func parseOurID(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if !isDigit(c) {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	return n, true
}
