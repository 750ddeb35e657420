package peer

import (
	"context"
	"encoding/json"
	"strconv"
	"sync/atomic"
	"time"
)

// This file holds ForwardFunc: Forward for a caller that calls many peers
// at once (a hub's call of every peer of a user or a topic) and waits for
// none of them.

// ForwardFunc is [Conn.Forward] without the wait: it sends req on, as it
// is, under an id of c's own, and returns at once; done gets what Forward
// would have returned (the other side's raw result, or its *Error, or an
// error wrapping ErrClosed or context.DeadlineExceeded), once, on
// whichever goroutine learns it first: c's reader, c's timer, c's Close,
// or the end of ctx. So calling a thousand peers costs no goroutine, nor
// a timer, per call. done must not block.
//
// timeout, when positive, bounds the call, as Forward's does (the other
// side is then sent rpc.cancel). When ctx ends first, the other side
// is sent rpc.cancel and done gets ctx.Err() at once. ForwardFunc never
// waits for room in c's queue: when c's other side is not reading what it
// is sent, done gets a -32004 error and nothing is sent. A notification is
// queued, and done gets a nil result.
func (c *Conn) ForwardFunc(ctx context.Context, req *Request, timeout time.Duration, done func(json.RawMessage, error)) {
	if req.IsNotification() {
		done(nil, c.trySend(appendRequest(nil, nil, req.Method, req.Params)))
		return
	}
	f := &funcCall{to: c, method: req.Method, timeout: timeout, done: done}
	p := &pendingCall{to: f}
	if timeout > 0 {
		p.deadline = monotime() + int64(timeout)
	}
	id, err := c.addPending(p, true)
	if err != nil {
		done(nil, err)
		return
	}
	f.id = id
	var idBuf [20]byte
	idText := strconv.AppendUint(idBuf[:0], id, 10)
	if err := c.trySend(appendRequest(nil, idText, req.Method, req.Params)); err != nil {
		if c.forget(id) {
			c.hand(id, p, reply{err: err})
		}
		return
	}
	stop := context.AfterFunc(ctx, func() {
		if c.forget(id) {
			c.cancelRemote(id)
			c.hand(id, p, reply{err: ctx.Err()})
		}
	})
	f.stop.Store(&stop)
	if f.ended.Load() {
		stop() // answered before the stop was stored
	}
}

// trySend queues b if c's queue has room, without waiting; else it
// returns a -32004 error. Another goroutine writes it.
func (c *Conn) trySend(b []byte) error {
	switch err := c.out.offer(b); {
	case err == errNoRoom: //nolint:errorlint // our own sentinel
		return &Error{Code: CodeOverloaded, Message: "Overloaded: the peer is not reading what it is sent"}
	case err != nil:
		return c.Err()
	}
	return nil
}

// funcCall is a call of ForwardFunc waiting for its answer.
type funcCall struct {
	to      *Conn
	id      uint64
	method  string
	timeout time.Duration
	done    func(json.RawMessage, error)
	// stop unties the call from its ctx once it is answered; ended
	// tells ForwardFunc that it was answered before stop was stored.
	stop  atomic.Pointer[func() bool]
	ended atomic.Bool
}

// complete ends the call with its outcome (see completion).
func (f *funcCall) complete(_ *Conn, _ uint64, r reply) {
	f.ended.Store(true)
	if stop := f.stop.Load(); stop != nil {
		(*stop)()
	}
	f.done(f.to.passedOn(f.id, f.method, f.timeout, r))
}
