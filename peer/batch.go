package peer

import (
	"context"
	"fmt"
	"strconv"
)

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
// every call not yet answered is set too. A batch of only notifications
// returns once it is queued.
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

	err := c.send(ctx, msg)
	for _, w := range calls {
		if err != nil {
			c.forget(w.id)
			w.elem.Err = err
			continue
		}
		select {
		case r := <-w.p.ch:
			if r.err != nil {
				w.elem.Err = r.err
			} else if derr := unmarshalResult(r.result, w.elem.Result); derr != nil {
				w.elem.Err = fmt.Errorf("peer: decode result of %s: %w", w.elem.Method, derr)
			}
		case <-ctx.Done():
			err = ctx.Err()
			if c.forget(w.id) {
				c.cancelRemote(strconv.AppendUint(nil, w.id, 10))
			}
			w.elem.Err = err
		}
	}
	return err
}
