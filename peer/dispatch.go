package peer

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"go.uber.org/zap"
)

// This file holds the serving side of a Conn: what the reader does with
// each message it reads, and the handlers it starts.

// dispatch handles one incoming message or batch. It runs on the reader
// goroutine. It waits only for the connection's own limits: for room in
// the outbound queue for its immediate replies, and for in-flight slots
// for the calls it starts (backpressure: meanwhile, nothing more is read).
// Concurrent handlers of single calls run on the reader (see reader.go),
// serial ones and batches on workers. It reports whether the caller still
// holds the reader role.
func (c *Conn) dispatch(ctx context.Context, frame []byte) bool {
	buf := c.msgs
	if len(frame) > 0 && frame[0] == '[' {
		if p, ok := batchMsgs.Get().(*[]message); ok {
			buf = *p
		}
	}
	f, ok := parseFrame(buf, frame, c.o.MaxBatch, c.o.MaxDepth)
	kept := false
	defer func() {
		if !kept {
			c.keepMsgs(f.msgs)
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
		if m.isResponse() {
			c.deliver(m)
			return true
		}
		call, reply := c.prepare(m, nil)
		// The message is done with: its buffer goes back to the reader
		// now, since start may run a handler past the moment this
		// goroutine stops being the reader.
		c.keepMsgs(f.msgs)
		kept = true
		if reply != nil {
			c.post(reply)
		}
		if call != nil {
			return c.start(ctx, call)
		}
		return true
	case f.tooBig:
		c.limit(LimitBatch)
		fallthrough
	case len(f.msgs) == 0:
		c.post(appendError(nil, nullJSON, errInvalidRequest()))
		return true
	}
	calls := make([]*call, 0, len(f.msgs))
	spare := make([]call, len(f.msgs))
	var replies [][]byte
	for i := range f.msgs {
		m := &f.msgs[i]
		if m.isResponse() {
			c.deliver(m)
			continue
		}
		call, reply := c.prepare(m, &spare)
		if reply != nil {
			replies = append(replies, reply)
		}
		if call == nil {
			continue
		}
		if call.mode == Inline {
			// Inline elements run here, in order, like single messages.
			if out := run(c.inlineContext(ctx, call), &c.o, call); out != nil {
				replies = append(replies, out)
			}
			continue
		}
		calls = append(calls, call)
	}
	if len(calls) > 0 {
		c.startBatch(ctx, calls, replies)
	} else if len(replies) > 0 {
		c.post(appendBatch(nil, replies))
	}
	return true
}

// keepMsgs keeps the array of msgs, emptied so that it holds on to no
// frame, for the reader's next frame when it is small, else for the next
// batch of any connection.
func (c *Conn) keepMsgs(msgs []message) {
	clear(msgs)
	if cap(msgs) <= keptMsgs {
		c.msgs = msgs[:0]
		return
	}
	msgs = msgs[:0]
	batchMsgs.Put(&msgs)
}

// keptMsgs is the most decoded messages whose room a reader keeps from one
// frame to the next (a message is 136 bytes). The arrays of larger batches
// are shared by all connections, through batchMsgs: a connection that
// once sent a batch of a thousand does not keep 136 KB for its life.
const keptMsgs = 16

// batchMsgs holds *[]message arrays of more than keptMsgs messages, for
// the batches of every connection.
var batchMsgs sync.Pool

// startBatch runs the calls of a batch on a worker, which sends the
// replies (those given and the calls') as one array. The batch takes as
// many in-flight slots as it runs calls at once; the reader waits for
// them.
func (c *Conn) startBatch(ctx context.Context, calls []*call, replies [][]byte) {
	n := min(len(calls), c.o.BatchWorkers, c.o.MaxInFlight)
	if !c.takeSlots(n) {
		for _, cl := range calls {
			if out := c.refusal(cl); out != nil {
				replies = append(replies, out)
			}
		}
		if len(replies) > 0 {
			c.post(appendBatch(nil, replies))
		}
		return
	}
	c.pool.spawn(func() {
		replies := runBatch(ctx, &c.o, calls, replies,
			func(cl *call) context.Context { return c.register(ctx, cl) },
			c.unregister)
		if len(replies) > 0 {
			_ = c.send(c.life, appendBatch(nil, replies))
		}
		c.freeSlots(n)
	})
}

// prepare applies the rate limit, handles the system methods that need
// this connection, then validates and routes like the package-level
// prepare. While the connection drains, calls are refused with -32005.
// It runs on the reader.
func (c *Conn) prepare(m *message, spare *[]call) (*call, []byte) {
	if c.limiter != nil && !c.limiter.Allow() {
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
	cl, reply := prepare(&c.o, m, spare)
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
	if !validID(id) {
		return
	}
	c.mu.Lock()
	cl := c.inflight[string(id)]
	c.mu.Unlock()
	if cl != nil {
		cl.cancel(errCancelled)
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
func (c *Conn) start(ctx context.Context, cl *call) bool {
	if cl.mode == Inline {
		if out := run(c.inlineContext(ctx, cl), &c.o, cl); out != nil {
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
	hctx, ri := c.registerInfo(ctx, cl)
	if cl.mode == Concurrent && c.spawning.Load() {
		c.pool.spawn(func() {
			if out := run(hctx, &c.o, cl); out != nil {
				_ = c.send(c.life, out)
			}
			c.finish(cl)
		})
		return true
	}
	if cl.mode != Serial {
		s := c.enterHandler()
		ri.reader.Store(s)
		if out := run(hctx, &c.o, cl); out != nil {
			_ = c.send(c.life, out)
		}
		ri.reader.Store(0)
		c.finish(cl)
		return c.exitHandler(s)
	}
	done := make(chan struct{})
	wait := c.tail
	c.tail = done // c.tail belongs to the reader
	c.pool.spawn(func() {
		defer close(done)
		if wait != nil {
			select {
			case <-wait:
			case <-hctx.Done():
				// Cancelled while waiting its turn: answer without
				// running, but hold the line, so that the call behind
				// this one still starts only after the one ahead.
				if !cl.req.IsNotification() {
					_ = c.send(c.life, appendError(nil, []byte(cl.req.ID.raw), ToError(hctx.Err())))
				}
				c.finish(cl)
				<-wait
				return
			}
		}
		if out := run(hctx, &c.o, cl); out != nil {
			_ = c.send(c.life, out)
		}
		c.finish(cl)
	})
	return true
}

// deliver hands a response to the call waiting for it. Responses to
// unknown ids (a call that timed out, say) are dropped. It runs on the
// reader.
func (c *Conn) deliver(m *message) {
	id, ok := parseOurID(m.id)
	if !ok {
		c.o.Logger.Debug("response with unknown id dropped", zap.ByteString("id", m.id))
		return
	}
	c.mu.Lock()
	p := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if p == nil {
		c.o.Logger.Debug("response with unknown id dropped", zap.ByteString("id", m.id))
		return
	}
	r := decodeReply(m)
	r.read = true
	p.ch <- r
}

func decodeReply(m *message) reply {
	switch {
	case !m.version || (m.result != nil && m.err != nil):
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
