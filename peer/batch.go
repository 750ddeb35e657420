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
