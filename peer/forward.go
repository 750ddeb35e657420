package peer

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// This file holds Forward: a call made on behalf of another peer, whose
// request and answer pass through as they are.

// Forward sends req, as it is, to the other side of c, under an id of c's
// own, and returns the other side's answer unchanged: the result as raw
// JSON, or the *Error it answered with (code, message and data). It is how
// a hub passes a call from one peer on to another: a handler serving req
// on the caller's connection returns what Forward returns, and the caller
// gets the answer under its own id.
//
// ctx is the context of that handler. When it ends (the caller sent
// rpc.cancel, or left), Forward sends rpc.cancel to the other side and
// keeps waiting for the answer, normally -32002, which is then the answer
// to pass back. It stops waiting early only when no one is left to take
// the answer: the caller's connection closed, or ctx is not a handler's on
// a connection (HTTP POST, where a cancelled context means the client
// went away); it then returns ctx.Err(). The rpc.progress notifications
// the other side sends for the call reach the caller of the request ctx
// is serving, under the caller's id, before the answer.
//
// timeout, when positive, bounds the whole call: once it passes, the other
// side gets rpc.cancel and Forward returns an error wrapping
// context.DeadlineExceeded (which [ToError] answers with -32003).
// Forward returns an error wrapping ErrClosed when c closes before the
// answer comes (the call may or may not have run), and -32005 without
// sending anything when c is shutting down; [Conn.Shutdown] waits for the
// forwarded calls already sent. A notification (req has no ID) is sent as
// one: Forward returns once it is queued, with a nil result.
func (c *Conn) Forward(ctx context.Context, req *Request, timeout time.Duration) (json.RawMessage, error) {
	var tctx context.Context = ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		tctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	if req.IsNotification() {
		return nil, c.send(tctx, appendRequest(nil, nil, req.Method, req.Params))
	}
	ri, _ := ctx.Value(ctxKey{}).(*reqInfo)
	p := &pendingCall{ch: make(chan reply, 1)}
	if ri != nil && !ri.id.IsZero() {
		p.progress = ri.relayProgress
	}
	id, err := c.addPending(p, true)
	if err != nil {
		return nil, err
	}
	defer c.forwarded()

	var idBuf [20]byte
	idText := strconv.AppendUint(idBuf[:0], id, 10)
	if err := c.send(tctx, appendRequest(nil, idText, req.Method, req.Params)); err != nil {
		c.abandon(id, p, false)
		if ctx.Err() == nil && tctx.Err() != nil {
			return nil, c.timedOut(req.Method, timeout)
		}
		return nil, err
	}
	defer c.lend(ctx)() // the answer comes on another connection: read on meanwhile
	if r, ok := c.await(tctx, id, p); ok {
		return r.result, r.err
	}
	if ctx.Err() == nil { // the timeout, not the caller
		c.abandon(id, p, true)
		return nil, c.timedOut(req.Method, timeout)
	}

	// The caller gave up: pass it on, and wait for the other side's
	// answer to pass back, within what is left of timeout.
	if ri == nil {
		c.abandon(id, p, true)
		return nil, ctx.Err()
	}
	c.cancelRemote(id)
	var expired <-chan time.Time
	if deadline, ok := tctx.Deadline(); ok && timeout > 0 {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		expired = t.C
	}
	select {
	case r := <-p.ch:
		return r.result, r.err
	case <-ri.c.closing:
		c.forget(id)
		return nil, ctx.Err()
	case <-expired:
		c.forget(id)
		return nil, c.timedOut(req.Method, timeout)
	}
}

// forwarded ends a call of Forward: a draining connection may now be idle.
func (c *Conn) forwarded() {
	c.mu.Lock()
	c.forwards--
	c.checkIdleLocked()
	c.mu.Unlock()
}

func (c *Conn) timedOut(method string, timeout time.Duration) error {
	return fmt.Errorf("peer: no answer to forwarded %s within %v: %w", method, timeout, context.DeadlineExceeded)
}

// relayProgress passes rpc.progress data on to the caller of ri's request.
// It runs on the reader of the connection the data came from, so it must
// not wait: it queues the notification as an event is queued ([Conn.Post]),
// and a caller too slow to read its queue is closed.
func (ri *reqInfo) relayProgress(data json.RawMessage) {
	b := make([]byte, 0, len(ri.id.raw)+len(data)+80)
	b = append(b, `{"jsonrpc":"2.0","method":"rpc.progress","params":{"id":`...)
	b = append(b, ri.id.raw...)
	if len(data) > 0 {
		b = append(b, `,"data":`...)
		b = append(b, data...)
	}
	b = append(b, "}}"...)
	_ = ri.c.Post(b)
}
