package peer

import (
	"context"
	"encoding/json"
	"errors"

	"go.uber.org/zap"
)

// This file holds the serving side of a Conn: what the reader does with
// each message it reads, and the handlers it starts.

// dispatch handles one incoming message or batch. It runs on the reader
// goroutine and never blocks: handlers get goroutines of their own, and
// immediate replies are queued without waiting.
func (c *Conn) dispatch(ctx context.Context, frame []byte) {
	f, ok := parseFrame(frame, c.o.MaxBatch)
	if !ok {
		c.post(appendError(nil, nullJSON, errParse()))
		return
	}
	if !f.batch {
		m := &f.msgs[0]
		if m.isResponse() {
			c.deliver(m)
			return
		}
		call, reply := c.prepare(m)
		if reply != nil {
			c.post(reply)
		}
		if call != nil {
			c.start(ctx, call)
		}
		return
	}
	if len(f.msgs) == 0 || f.tooBig {
		c.post(appendError(nil, nullJSON, errInvalidRequest()))
		return
	}
	var calls []*call
	var replies [][]byte
	for i := range f.msgs {
		m := &f.msgs[i]
		if m.isResponse() {
			c.deliver(m)
			continue
		}
		call, reply := c.prepare(m)
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
	if len(calls) == 0 {
		if len(replies) > 0 {
			c.post(appendBatch(nil, replies))
		}
		return
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.batches++
	c.pool.spawn(func() {
		replies := runBatch(ctx, &c.o, calls, replies,
			func(cl *call) (context.Context, bool) { return c.acquire(ctx, cl) },
			c.release)
		if len(replies) > 0 {
			_ = c.send(c.life, appendBatch(nil, replies))
		}
		c.mu.Lock()
		c.batches--
		c.checkIdleLocked()
		c.mu.Unlock()
	})
	c.mu.Unlock()
}

// prepare handles the system methods that need this connection, then
// validates and routes like the package-level prepare. It runs on the
// reader.
func (c *Conn) prepare(m *message) (*call, []byte) {
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
	return prepare(&c.o, m)
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

// start runs one call on a worker goroutine, or refuses it at once when
// MaxInFlight calls are running. It runs on the reader, and so do inline
// handlers; a serial call's worker first waits for the call ahead of it.
func (c *Conn) start(ctx context.Context, cl *call) {
	if cl.mode == Inline {
		if out := run(c.inlineContext(ctx, cl), &c.o, cl); out != nil {
			c.post(out)
		}
		return
	}
	hctx, ok := c.acquire(ctx, cl)
	if !ok {
		if !cl.req.IsNotification() {
			c.post(appendError(nil, []byte(cl.req.ID.raw), errOverloaded()))
		} else {
			c.o.Logger.Debug("notification dropped: too many in flight", zap.String("method", cl.req.Method))
		}
		return
	}
	var wait <-chan struct{}
	var done chan struct{}
	c.mu.Lock()
	if cl.mode == Serial {
		done = make(chan struct{})
		wait, c.tail = c.tail, done
	}
	c.pool.spawn(func() {
		if done != nil {
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
					c.release(cl)
					<-wait
					return
				}
			}
		}
		out := run(hctx, &c.o, cl)
		if out != nil {
			_ = c.send(c.life, out)
		}
		c.release(cl)
	})
	c.mu.Unlock()
}

// inlineContext is the context of an inline handler: no slot, and no
// cancellation of its own, since rpc.cancel cannot arrive while it runs.
func (c *Conn) inlineContext(ctx context.Context, cl *call) context.Context {
	return context.WithValue(ctx, ctxKey{}, &reqInfo{c: c, id: cl.req.ID})
}

// acquire takes an in-flight slot for cl and returns the handler's context.
// It runs on the reader, or on a batch's worker for a batch element.
func (c *Conn) acquire(ctx context.Context, cl *call) (context.Context, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.running >= c.o.MaxInFlight {
		return nil, false
	}
	if c.draining {
		return nil, false
	}
	c.running++
	hctx := context.WithValue(ctx, ctxKey{}, &reqInfo{c: c, id: cl.req.ID})
	if !cl.req.IsNotification() {
		var cancel context.CancelCauseFunc
		hctx, cancel = context.WithCancelCause(hctx)
		cl.cancel = cancel
		if _, dup := c.inflight[cl.req.ID.raw]; !dup {
			c.inflight[cl.req.ID.raw] = cl // a duplicate id cannot be cancelled
		}
	}
	return hctx, true
}

// release gives back cl's slot once its reply is queued. It runs on the
// handler's worker.
func (c *Conn) release(cl *call) {
	c.mu.Lock()
	c.running--
	if c.inflight[cl.req.ID.raw] == cl {
		delete(c.inflight, cl.req.ID.raw)
	}
	c.checkIdleLocked()
	c.mu.Unlock()
	if cl.cancel != nil {
		cl.cancel(nil)
	}
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
	p.ch <- decodeReply(m)
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
