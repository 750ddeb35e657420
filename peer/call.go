package peer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	"github.com/switchboard-rpc/switchboard/internal/jsonx"
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
	orig := ctx
	if _, ok := ctx.Deadline(); !ok && c.o.CallTimeout > 0 {
		// The connection's timer fails the call when its time is up (no
		// timer or context per call), and p stands in for ctx while the
		// call waits to be sent, ending when either does.
		p.Context, p.deadline = ctx, monotime()+int64(c.o.CallTimeout)
		ctx = p
	}
	// The caller reads its own reply if the reader role is parked (see
	// own.go); else it waits on the poll waker if it is free (wake.go).
	if p.rd = c.takeRole(); p.rd == nil {
		if p.solo = c.wk != nil && c.wk.take(); p.solo {
			defer c.wk.give()
		}
	}
	id, err := c.addPending(p, false)
	if err != nil {
		if p.rd != nil {
			p.rd.park() // closed: park gives it to a reader, which ends
			p.rd = nil
		}
		reuse = true
		enc.release()
		return err
	}
	var idBuf [20]byte
	msg := appendRequest(nil, strconv.AppendUint(idBuf[:0], id, 10), method, b)
	enc.release()
	if err := c.send(ctx, msg); err != nil {
		c.abandon(id, p, false)
		return err
	}
	defer c.lend(ctx)()
	r, ok := c.await(orig, id, p)
	if !ok {
		c.abandon(id, p, true)
		return orig.Err()
	}
	if r.expired {
		c.cancelRemote(id)
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
	e.enc = jsonx.NewEncoder(&e.buf)
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
	c.wantReader() // the answer is read by a reader goroutine
	var err error
	switch {
	case c.expectPong != nil:
		err = c.pingFrame(ctx)
	case c.ping != nil:
		err = c.ping(ctx)
	default:
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

// PingIdle is Ping for keeping a connection alive: it pings only when
// the other side has shown no sign of life since the previous PingIdle
// and has nothing waiting to be written to it, and otherwise returns nil
// at once. A sign of life is a message read, or this side's reader
// waiting for room for its replies meanwhile. Whether a peer with
// messages waiting for it reads them is the business of the write-stall
// watchdog (Options.WriteStall), which closes it once writes make no
// progress. Neither is asked to answer a ping: a peer that pipelines
// calls has its writer blocked behind them once this side stops reading,
// and its WebSocket library may give a pong no more than 5 s to get
// through; a ping sent in a lull of its sending would be read behind its
// replies, at a moment when its writer is blocked.
func (c *Conn) PingIdle(ctx context.Context) error {
	mark := c.reads.Load() + c.pauses.Load()
	if c.pingMark.Swap(mark) != mark || c.paused.Load() || c.out.bytes.Load() > 0 {
		return nil
	}
	return c.Ping(ctx)
}

// pingFrame queues a ping behind the messages waiting to be written (see
// outbox.pushPing), and waits for its pong, ctx or the connection's end.
// The ping is not written with a deadline of its own: a peer that reads
// slowly gets it late, and answers late; one that stops reading is the
// write-stall watchdog's (Options.WriteStall).
func (c *Conn) pingFrame(ctx context.Context) error {
	payload, pong, forget := c.expectPong()
	defer forget()
	c.out.pushPing(payload)
	select {
	case <-pong:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.closing:
		return fmt.Errorf("%w: ping", ErrClosed)
	}
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
	for i := range elems {
		if elems[i].Notify {
			continue
		}
		w := waiting{elem: &elems[i], p: newPendingCall()}
		id, err := c.addPending(w.p, false)
		if err != nil {
			for _, w := range calls {
				c.forget(w.id)
			}
			return err
		}
		w.id = id
		calls = append(calls, w)
	}

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
			c.abandon(w.id, w.p, false)
			w.elem.Err = err
		}
		return err
	}
	defer c.lend(ctx)()
	var err error
	for _, w := range calls {
		r, ok := reply{}, false
		if err == nil {
			if r, ok = c.await(ctx, w.id, w.p); !ok {
				err = ctx.Err()
			}
		}
		// Once ctx has ended, the replies that have arrived are taken,
		// and the calls still pending are given up on (and cancelled at
		// the other side).
		if !ok {
			r, ok = c.abandon(w.id, w.p, true)
		}
		if ok {
			w.elem.setReply(r)
		} else {
			w.elem.Err = err
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
