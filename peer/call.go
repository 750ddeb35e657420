package peer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// This file holds the calling side of a Conn: Call, Notify and Batch, and
// the context helpers a handler uses to reach its caller. They run on the
// caller's goroutine; the reader delivers their replies (see deliver).

// Call calls method on the other side with params (nil, or anything that
// encodes to a JSON array or object; a json.RawMessage is sent as is) and
// decodes the result into result (a pointer; nil discards it, and a
// *json.RawMessage receives the raw JSON).
//
// Call returns an *Error when the other side answered with one. If ctx
// ends first, Call sends rpc.cancel for the call and returns ctx.Err().
// A ctx without a deadline gets Options.CallTimeout: when it passes, Call
// sends rpc.cancel and returns context.DeadlineExceeded. When the
// connection closes, Call returns an error wrapping ErrClosed; the call
// may or may not have run on the other side.
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	enc, b, err := encodeParams(params)
	if err != nil {
		return err
	}
	p := getPendingCall()
	p.progress = progressFunc(ctx)
	reuse := false
	defer func() { p.release(reuse) }()
	orig, caller := ctx, ctx.Done() // caller: nil for a ctx that never ends
	if _, ok := ctx.Deadline(); !ok && c.o.CallTimeout > 0 {
		// The connection's timer fails the call when its time is up (no
		// timer or context per call), and p stands in for ctx, ending
		// when either does.
		p.Context, p.deadline = ctx, monotime()+int64(c.o.CallTimeout)
		ctx = p
	}
	// The caller waits on the poll waker if it is free.
	solo := c.wk != nil && c.wk.take()
	if solo {
		defer c.wk.give()
	}
	p.solo = solo
	c.mu.Lock()
	if c.closed {
		err := c.cause
		c.mu.Unlock()
		reuse = true
		enc.release()
		return err
	}
	c.nextID++
	id := c.nextID
	c.pending[id] = p
	if p.deadline != 0 {
		c.timeouts.addLocked(c, p.deadline)
	}
	c.mu.Unlock()

	var idBuf [20]byte
	idText := strconv.AppendUint(idBuf[:0], id, 10)
	msg := appendRequest(nil, idText, method, b)
	enc.release()
	if err := c.send(ctx, msg); err != nil {
		// If it was not pending any more, its reply is in p.ch, or on its
		// way: p cannot be reused.
		if !c.forget(id) && solo {
			c.wk.drain(id)
			<-p.ch
		}
		return err
	}
	defer c.lend(ctx)()
	var r reply
	waited := false
	if solo {
		switch err := c.wk.wait(orig, id); {
		case err == nil:
			r, waited = <-p.ch, true
		case orig.Err() != nil:
			if c.forget(id) {
				c.cancelRemote(idText)
			} else {
				c.wk.drain(id) // its reply is on its way
				<-p.ch
			}
			return orig.Err()
		}
		// Otherwise the pipe was closed with the connection, which sends
		// the reply on p.ch.
	}
	switch {
	case waited:
	case caller == nil:
		r = <-p.ch // the timer sends the timeout's reply
	default:
		select {
		case r = <-p.ch:
		case <-caller:
			if c.forget(id) {
				c.cancelRemote(idText)
			}
			return orig.Err()
		}
	}
	if r.expired {
		c.cancelRemote(idText)
		return context.DeadlineExceeded
	}
	// The reader is done with p once it has delivered its reply: p is
	// pending no more, and no one else holds it.
	reuse = r.read
	if r.err != nil {
		return r.err
	}
	if err := unmarshalResult(r.result, result); err != nil {
		return fmt.Errorf("peer: decode result of %s: %w", method, err)
	}
	return nil
}

// paramsEncoder encodes a call's params into a buffer of its own, reused:
// the request frame is then the only allocation of the encoding.
type paramsEncoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

var paramsEncoders = sync.Pool{New: func() any {
	e := new(paramsEncoder)
	e.enc = json.NewEncoder(&e.buf)
	return e
}}

// maxPooledParams is the largest buffer kept for reuse: one large call
// must not keep its memory for good.
const maxPooledParams = 16 << 10

// encodeParams is marshalParams for Call: the params it returns are in
// enc's buffer, valid until enc.release (a nil enc's release does
// nothing).
func encodeParams(params any) (enc *paramsEncoder, b []byte, err error) {
	switch params.(type) {
	case nil, json.RawMessage:
		b, err = marshalParams(params)
		return nil, b, err
	}
	enc = paramsEncoders.Get().(*paramsEncoder)
	if err := enc.enc.Encode(params); err != nil {
		enc.release()
		return nil, nil, err
	}
	b = enc.buf.Bytes()
	b = b[:len(b)-1] // Encode ends the value with a newline
	if len(b) == 0 || (b[0] != '[' && b[0] != '{') {
		enc.release()
		return nil, nil, errParamsType
	}
	return enc, b, nil
}

func (e *paramsEncoder) release() {
	if e == nil {
		return
	}
	if e.buf.Cap() > maxPooledParams {
		return
	}
	e.buf.Reset()
	paramsEncoders.Put(e)
}

// pendingCall is a call made on this side and waiting for its reply.
type pendingCall struct {
	// ch receives the reply, once: whoever removes the call from
	// Conn.pending (with Conn.mu held) sends it.
	ch       chan reply
	progress func(json.RawMessage)
	// solo: the caller waits on the connection's poll waker, which whoever
	// sends on ch then tells the call's id (see wake.go).
	solo bool

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

var pendingCalls = sync.Pool{New: func() any {
	return &pendingCall{ch: make(chan reply, 1), done: make(chan struct{})}
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

// hand gives call id's caller its reply r, once whoever holds p has
// removed it from Conn.pending: on p's channel, and, if the caller waits
// on the poll waker, by the call's id there too (see wake.go).
func (c *Conn) hand(id uint64, p *pendingCall, r reply) {
	solo := p.solo // p is the caller's again once sent
	p.ch <- r
	if solo {
		c.wk.notify(id)
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

// expireCalls is the timer's function: it fails the pending calls whose
// deadline has passed and arms the timer for the earliest one left.
func (c *Conn) expireCalls() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.timeouts.at = 0
	if c.closed {
		return
	}
	now := monotime()
	var next int64
	for id, p := range c.pending {
		switch {
		case p.deadline == 0:
		case p.deadline <= now:
			delete(c.pending, id)
			p.end(context.DeadlineExceeded)
			c.hand(id, p, reply{expired: true})
		case next == 0 || p.deadline < next:
			next = p.deadline
		}
	}
	if next != 0 {
		c.timeouts.addLocked(c, next)
	}
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
func (c *Conn) cancelRemote(id []byte) {
	params := append(append([]byte(`{"id":`), id...), '}')
	c.out.push(appendRequest(nil, nil, "rpc.cancel", params))
}

// Ping checks that the other side still answers: with a WebSocket ping,
// which the other side's WebSocket library answers by itself, when the
// transport has one, else with an rpc.ping call. It returns nil once
// answered; ctx's error when ctx ends first, unless messages kept arriving
// meanwhile (an answer can queue behind them) or this side's reader
// waited for room or for a slot meanwhile (it could not read the answer):
// then the other side is not known to be gone, and Ping returns nil.
// Otherwise it returns the error that made it fail, such as a closed
// connection's.
func (c *Conn) Ping(ctx context.Context) error {
	reads, pauses := c.reads.Load(), c.pauses.Load()
	var err error
	if p, ok := c.t.(interface{ Ping(context.Context) error }); ok {
		err = p.Ping(ctx)
	} else {
		err = c.Call(ctx, "rpc.ping", nil, nil)
	}
	if err == nil || ctx.Err() == nil {
		return err
	}
	if c.reads.Load() != reads || c.pauses.Load() != pauses || c.paused.Load() {
		return nil
	}
	return ctx.Err()
}

// Notify sends a notification: no reply comes, and none is awaited.
// It returns once the message is queued.
func (c *Conn) Notify(ctx context.Context, method string, params any) error {
	b, err := marshalParams(params)
	if err != nil {
		return err
	}
	return c.send(ctx, appendRequest(nil, nil, method, b))
}

// BatchElem is one element of a batch sent with [Conn.Batch].
type BatchElem struct {
	Method string
	Params any  // nil, or anything that encodes to a JSON array or object
	Result any  // where to decode the result, as in Call; nil discards it
	Notify bool // send as a notification: no result, no error

	// Err is set by Batch: an *Error when the other side answered this
	// element with an error, or the transport or decoding error.
	Err error
}

// Batch sends the elements as one JSON-RPC batch (one message) and waits
// for every reply; the replies may come in any order and are matched by
// id. Each element's outcome is in its Err field. Batch itself returns an
// error only when the batch could not be sent or ctx ended; then the Err of
// every call not yet answered is set to it too, and those calls are
// cancelled at the other side with rpc.cancel, while replies that did
// arrive keep their results. A batch of only notifications returns once
// it is queued.
func (c *Conn) Batch(ctx context.Context, elems []BatchElem) error {
	if len(elems) == 0 {
		return nil
	}
	if _, ok := ctx.Deadline(); !ok && c.o.CallTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.o.CallTimeout)
		defer cancel()
	}
	params := make([][]byte, len(elems))
	for i := range elems {
		b, err := marshalParams(elems[i].Params)
		if err != nil {
			return fmt.Errorf("peer: batch element %d (%s): %w", i, elems[i].Method, err)
		}
		params[i] = b
	}

	type waiting struct {
		elem *BatchElem
		id   uint64
		p    *pendingCall
	}
	var calls []waiting
	c.mu.Lock()
	if c.closed {
		err := c.cause
		c.mu.Unlock()
		return err
	}
	for i := range elems {
		if elems[i].Notify {
			continue
		}
		c.nextID++
		w := waiting{elem: &elems[i], id: c.nextID, p: &pendingCall{ch: make(chan reply, 1)}}
		c.pending[w.id] = w.p
		calls = append(calls, w)
	}
	c.mu.Unlock()

	msg := []byte{'['}
	next := 0
	for i := range elems {
		if i > 0 {
			msg = append(msg, ',')
		}
		var id []byte
		if !elems[i].Notify {
			id = strconv.AppendUint(nil, calls[next].id, 10)
			next++
		}
		msg = appendRequest(msg, id, elems[i].Method, params[i])
	}
	msg = append(msg, ']')

	if err := c.send(ctx, msg); err != nil {
		for _, w := range calls {
			c.forget(w.id)
			w.elem.Err = err
		}
		return err
	}
	defer c.lend(ctx)()
	var err error
	for _, w := range calls {
		if err == nil {
			select {
			case r := <-w.p.ch:
				w.elem.setReply(r)
				continue
			case <-ctx.Done():
				err = ctx.Err()
			}
		}
		// ctx has ended: take the replies that have arrived, and give up
		// on (and cancel at the other side) the calls still pending.
		if c.forget(w.id) {
			c.cancelRemote(strconv.AppendUint(nil, w.id, 10))
			w.elem.Err = err
		} else {
			w.elem.setReply(<-w.p.ch) // delivered, or failed by a close
		}
	}
	return err
}

func (e *BatchElem) setReply(r reply) {
	if r.err != nil {
		e.Err = r.err
	} else if err := unmarshalResult(r.result, e.Result); err != nil {
		e.Err = fmt.Errorf("peer: decode result of %s: %w", e.Method, err)
	}
}

// Handler-side context.

type ctxKey struct{}

type progressKey struct{}

// reqInfo is what a handler's context knows of its request. It is also
// the context that carries it to the handler: one allocation, where
// context.WithValue would make a second.
type reqInfo struct {
	context.Context // the parent

	c    *Conn
	id   ID
	slot bool // the handler holds an in-flight slot (see Conn.lend)
	// reader is the reader state (enterHandler's) of the handler while it
	// runs on its connection's reader, 0 when it does not (see leaveReader).
	reader atomic.Uint64
}

// Value returns ri for ctxKey, and the parent's values otherwise.
func (ri *reqInfo) Value(key any) any {
	if _, ok := key.(ctxKey); ok {
		return ri
	}
	return ri.Context.Value(key)
}

// ConnFromContext returns the connection a handler's request arrived on,
// so the handler can call back to its caller. It returns nil outside a
// handler and for requests served over HTTP POST.
func ConnFromContext(ctx context.Context) *Conn {
	if ri, ok := ctx.Value(ctxKey{}).(*reqInfo); ok {
		return ri.c
	}
	return nil
}

// Progress sends data to the caller of the request a handler is serving,
// as an rpc.progress notification. It does nothing for notifications and
// over HTTP POST, where no one could receive it.
func Progress(ctx context.Context, data any) error {
	ri, ok := ctx.Value(ctxKey{}).(*reqInfo)
	if !ok || ri.id.IsZero() {
		return nil
	}
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	params := make([]byte, 0, len(b)+len(ri.id.raw)+16)
	params = append(params, `{"id":`...)
	params = append(params, ri.id.raw...)
	params = append(params, `,"data":`...)
	params = append(params, b...)
	params = append(params, '}')
	return ri.c.send(ctx, appendRequest(nil, nil, "rpc.progress", params))
}

// WithProgress returns a context that makes a [Conn.Call] made with it
// report the callee's rpc.progress notifications to fn, in the order they
// arrive. fn runs on the connection's reader goroutine: it must return
// quickly and must not call the same connection and wait.
func WithProgress(ctx context.Context, fn func(data json.RawMessage)) context.Context {
	return context.WithValue(ctx, progressKey{}, fn)
}

func progressFunc(ctx context.Context) func(json.RawMessage) {
	fn, _ := ctx.Value(progressKey{}).(func(json.RawMessage))
	return fn
}
