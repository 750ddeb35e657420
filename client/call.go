package client

// This file holds the calls a Client makes: Call, Notify, Batch and
// Publish, on the live connection or after waiting for one.

import (
	"context"
	"errors"
	"fmt"

	"github.com/switchboard-rpc/switchboard/peer"
)

type failFastKey struct{}

// WithFailFast returns a context that makes the calls made with it fail at
// once (true) or wait for the reconnection (false) when the client is
// disconnected, whatever Options.FailFast says.
func WithFailFast(ctx context.Context, failFast bool) context.Context {
	return context.WithValue(ctx, failFastKey{}, failFast)
}

func (c *Client) failFast(ctx context.Context) bool {
	if v, ok := ctx.Value(failFastKey{}).(bool); ok {
		return v
	}
	return c.o.FailFast
}

// conn returns the live connection, waiting for one unless the call is
// to fail fast.
func (c *Client) conn(ctx context.Context) (*peer.Conn, error) {
	for {
		c.mu.Lock()
		closed, pc, ready, err := c.closed, c.pc, c.ready, c.err
		c.mu.Unlock()
		switch {
		case closed:
			return nil, err
		case pc != nil:
			if pc.Err() == nil {
				return pc, nil
			}
			// Down, and run has not noticed yet.
			c.markDown(pc, pc.Err())
			continue
		case c.failFast(ctx):
			return nil, ErrDisconnected
		}
		select {
		case <-ready:
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %w", ErrDisconnected, ctx.Err())
		}
	}
}

// live returns the connection if it is up, and nil if a call would have
// to wait for one (or fail): then Call takes the way of conn.
func (c *Client) live() *peer.Conn {
	c.mu.Lock()
	pc := c.pc
	c.mu.Unlock()
	if pc == nil || pc.Err() != nil {
		return nil
	}
	return pc
}

// withTimeout applies Options.CallTimeout to a ctx without a deadline.
func (c *Client) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); !ok && c.o.CallTimeout > 0 {
		return context.WithTimeout(ctx, c.o.CallTimeout)
	}
	return ctx, func() {}
}

// lost turns the error of a call on pc into the client's terms.
func (c *Client) lost(err error) error {
	if err == nil || !errors.Is(err, peer.ErrClosed) {
		return err
	}
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return fmt.Errorf("%w: %w", ErrClosed, err)
	}
	return fmt.Errorf("%w: %w", ErrConnectionLost, err)
}

// Call calls method on the hub with params (nil, or anything that encodes
// to a JSON array or object; a json.RawMessage is sent as is) and decodes
// the result into result (a pointer; nil discards it).
//
// It returns a *peer.Error when the hub answered with an error. While the
// client is disconnected, Call waits for the reconnection or fails at once
// with ErrDisconnected (see Options.FailFast). A call in flight when the
// connection drops fails with an error wrapping ErrConnectionLost and the
// connection's error; it may or may not have run. If ctx ends first, the
// hub is told to cancel the call (rpc.cancel) and Call returns ctx.Err().
// A ctx without a deadline gets Options.CallTimeout, and a ctx made with
// [peer.WithProgress] receives the hub's rpc.progress notifications.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	pc := c.live()
	if pc == nil {
		var cancel context.CancelFunc
		ctx, cancel = c.withTimeout(ctx)
		defer cancel()
		var err error
		if pc, err = c.conn(ctx); err != nil {
			return err
		}
	}
	return c.lost(pc.Call(ctx, method, params, result))
}

// Notify sends a notification: no reply comes. It returns once the
// message is queued, after waiting for a connection as Call does.
func (c *Client) Notify(ctx context.Context, method string, params any) error {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	pc, err := c.conn(ctx)
	if err != nil {
		return err
	}
	return c.lost(pc.Notify(ctx, method, params))
}

// Batch sends the elements as one JSON-RPC batch and waits for every reply,
// as [peer.Conn.Batch] does: each element's outcome is in its Err field,
// and Batch returns an error only when the batch as a whole failed.
// Connection losses are reported as by Call.
func (c *Client) Batch(ctx context.Context, elems []peer.BatchElem) error {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	pc, err := c.conn(ctx)
	if err != nil {
		return err
	}
	err = pc.Batch(ctx, elems)
	for i := range elems {
		elems[i].Err = c.lost(elems[i].Err)
	}
	return c.lost(err)
}

// Publish publishes data on topic through the hub (rpc.publish) and
// returns how many peers it reached.
func (c *Client) Publish(ctx context.Context, topic string, data any) (int, error) {
	var res struct {
		Delivered int `json:"delivered"`
	}
	err := c.Call(ctx, "rpc.publish", publishParams{Topic: topic, Data: data}, &res)
	return res.Delivered, err
}

type publishParams struct {
	Topic string `json:"topic"`
	Data  any    `json:"data"`
}
