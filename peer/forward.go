package peer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
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
// the answer: the caller's connection closed, or ctx is neither a
// handler's on a connection nor made with [WithProgress] (HTTP POST, where
// a cancelled context means the client went away); it then returns
// ctx.Err(). The rpc.progress notifications the other side sends for the
// call reach the caller of the request ctx is serving, under the caller's
// id, before the answer; outside a handler, the function of
// [WithProgress] (a call passed on from elsewhere, whose caller gets the
// progress and the answer its own way).
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
	if req.IsNotification() {
		if timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, timeout)
			defer cancel()
		}
		return nil, c.send(ctx, appendRequest(nil, nil, req.Method, req.Params))
	}
	ri, _ := ctx.Value(ctxKey{}).(*reqInfo)
	p := newPendingCall()
	p.progress = progressFunc(ctx)
	if ri != nil && !ri.req.IsNotification() {
		p.progress = ri.relayProgress
	}
	sctx := ctx // what bounds the wait for room to send
	if timeout > 0 {
		// The connection's timer ends the call when timeout passes (or
		// ctx's deadline, if sooner), as it does a Call's, and p stands in
		// for ctx until it is sent.
		limit := timeout
		if d, ok := ctx.Deadline(); ok {
			limit = max(min(limit, time.Until(d)), 1)
		}
		p.Context, p.deadline, p.done = ctx, monotime()+int64(limit), make(chan struct{})
		sctx = p
	}
	defer p.release(false)
	id, err := c.addPending(p, true)
	if err != nil {
		return nil, err
	}
	defer c.forwarded()

	var idBuf [20]byte
	idText := strconv.AppendUint(idBuf[:0], id, 10)
	if err := c.send(sctx, appendRequest(nil, idText, req.Method, req.Params)); err != nil {
		c.abandon(id, p, false)
		if ctx.Err() == nil && sctx.Err() != nil {
			return nil, c.timedOut(req.Method, timeout)
		}
		return nil, err
	}
	defer c.lend(ctx)() // the answer comes on another connection: read on meanwhile
	r, ok := c.await(ctx, id, p)
	if !ok && timeout > 0 && monotime() >= p.deadline {
		// ctx ended with the call's time: a timeout, not a caller that
		// gave up, whatever timer fired first.
		c.abandon(id, p, false)
		r, ok = reply{expired: true}, true
	}
	switch {
	case ok && r.expired:
		c.cancelRemote(id)
		return nil, c.timedOut(req.Method, timeout)
	case ok:
		return r.result, r.err
	}

	// The caller gave up: pass it on, and wait for the other side's
	// answer to pass back, unless no one is left to take it.
	var gone context.Context
	switch {
	case ri != nil:
		gone = ri.Context // the caller's connection's: ends as it closes
	case p.progress == nil:
		c.abandon(id, p, true)
		return nil, ctx.Err()
	default:
		gone = context.WithoutCancel(ctx)
	}
	c.cancelRemote(id)
	r, ok = c.await(gone, id, p)
	switch {
	case !ok:
		c.abandon(id, p, false)
		return nil, ctx.Err()
	case r.expired: // the other side was told already
		return nil, c.timedOut(req.Method, timeout)
	}
	return r.result, r.err
}

// Relay is Forward for a handler that returns what Relay returns, at
// once, instead of waiting for the answer: it sends req on as Forward
// does, and the caller of the request ctx serves gets its answer when the
// other side gives it, as then makes it from what Forward would have
// returned. The reader of c, which reads that answer, queues it for the
// caller itself: a forwarded call then costs no goroutine of its own and
// no handler waiting, and the caller's reader reads on meanwhile. then
// runs once, on whichever goroutine learns the outcome; it must not wait.
//
// The call stays the caller's in every way meanwhile: it holds its
// in-flight slot, rpc.cancel for it reaches the other side (whose answer
// is passed back), its connection's Shutdown waits for it, and so does
// c's. Where ctx is not the context of a concurrent single call on a
// connection (a batch's call, a serial or inline handler, HTTP POST), or
// req is a notification, Relay is then(c.Forward(ctx, req, timeout)).
// The handler must return Relay's results unchanged, and call it once.
func (c *Conn) Relay(ctx context.Context, req *Request, timeout time.Duration, then func(json.RawMessage, error) (json.RawMessage, error)) (json.RawMessage, error) {
	ri, _ := ctx.Value(ctxKey{}).(*reqInfo)
	if ri == nil || ri.cl == nil || ri.relayed || req.IsNotification() {
		return then(c.Forward(ctx, req, timeout))
	}
	r := &relayCall{to: c, ri: ri, method: req.Method, timeout: timeout, then: then, start: ri.c.o.now()}
	p := &pendingCall{to: r, progress: ri.relayProgress}
	if timeout > 0 {
		p.deadline = monotime() + int64(timeout)
	}
	id, err := c.addPending(p, true)
	if err != nil {
		return then(nil, err)
	}
	r.id = id
	ri.relayed = true
	var idBuf [20]byte
	idText := strconv.AppendUint(idBuf[:0], id, 10)
	if err := c.send(ctx, appendRequest(nil, idText, req.Method, req.Params)); err != nil {
		if c.forget(id) {
			c.hand(id, p, reply{err: err})
		}
		return nil, errRelayed
	}
	stop := context.AfterFunc(ctx, r.callerDone)
	r.stop.Store(&stop)
	return nil, errRelayed
}

// errRelayed is what a handler that called Relay returns: the call is
// answered later, by its relayCall.
var errRelayed = errors.New("peer: answered by Relay")

// relayCall is a call of Relay waiting for its answer.
type relayCall struct {
	to      *Conn    // the connection the call was sent on
	id      uint64   // its id there
	ri      *reqInfo // the caller's call, on ri.c
	method  string
	timeout time.Duration
	then    func(json.RawMessage, error) (json.RawMessage, error)
	start   int64 // for OnServe
	// stop unties callerDone from the caller's ctx, which ends with the
	// call: without it, callerDone would run then, on a goroutine of its
	// own. Set once the call is sent; done then makes callerDone a no-op.
	stop atomic.Pointer[func() bool]
	done atomic.Bool
}

// callerDone runs when the caller's ctx ends: rpc.cancel, the caller's
// connection closing, or its Shutdown giving up. The other side is told
// to stop, and its answer is passed back; unless no one is left to take
// it: then the call ends now.
func (r *relayCall) callerDone() {
	if r.done.Load() {
		return
	}
	select {
	case <-r.ri.c.closing:
		if r.to.forget(r.id) {
			r.to.cancelRemote(r.id)
			r.complete(r.to, r.id, reply{err: r.ri.Err()})
		}
	default:
		r.to.cancelRemote(r.id)
	}
}

// complete ends the call with its outcome (see completion), and answers
// the caller. It runs on the reader of c (r.to), for the other side's
// answer, which must not wait for the caller: a writer goroutine writes
// the answer, and when the caller's queue has no room, a worker of the
// caller's connection waits for it, as a handler's reply would.
func (r *relayCall) complete(_ *Conn, _ uint64, rp reply) {
	r.done.Store(true)
	if stop := r.stop.Load(); stop != nil {
		(*stop)()
	}
	res, err := r.then(r.to.passedOn(r.id, r.method, r.timeout, rp))
	c, cl := r.ri.c, r.ri.cl
	id := []byte(cl.req.ID.raw)
	var out []byte
	var code Code
	if err != nil {
		e := ToError(err)
		code = e.Code
		out = appendError(nil, id, e)
	} else {
		if res == nil {
			res = nullJSON
		}
		out = appendResult(nil, id, res)
	}
	if c.o.OnServe != nil {
		c.o.OnServe(cl.req.Method, code, time.Duration(monotime()-r.start))
	}
	c.unregister(cl)
	if err := c.out.offer(out); err == errNoRoom { //nolint:errorlint // our own sentinel
		// The caller reads slowly: its answer waits for room, holding
		// its slot, as a handler's reply does, on a worker of its own
		// connection rather than here.
		c.pool.spawn(func() {
			c.reply(out)
			c.freeSlots(1)
		})
		return
	}
	c.freeSlots(1)
}

// passedOn ends call id, passed on with Relay or ForwardFunc, and
// returns what its caller gets of rp: the other side's answer, or when
// its timeout passed (the other side is then told to stop), an error
// wrapping context.DeadlineExceeded.
func (c *Conn) passedOn(id uint64, method string, timeout time.Duration, rp reply) (json.RawMessage, error) {
	c.forwarded()
	if rp.expired {
		c.cancelRemote(id)
		return nil, c.timedOut(method, timeout)
	}
	return rp.result, rp.err
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
	b := make([]byte, 0, len(ri.req.ID.raw)+len(data)+80)
	b = append(b, `{"jsonrpc":"2.0","method":"rpc.progress","params":{"id":`...)
	b = append(b, ri.req.ID.raw...)
	if len(data) > 0 {
		b = append(b, `,"data":`...)
		b = append(b, data...)
	}
	b = append(b, "}}"...)
	_ = ri.c.Post(b)
}
