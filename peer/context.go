package peer

import (
	"context"
	"encoding/json"

	"github.com/switchboard-rpc/switchboard/internal/jsonx"
)

// This file holds what a handler's context carries: the connection its
// request came on, for calling back, and the request's id, for rpc.progress.

type ctxKey struct{}

type progressKey struct{}

// reqInfo is what a handler's context knows of its request. It is also
// the context that carries it to the handler: one allocation, where
// context.WithValue would make a second.
type reqInfo struct {
	context.Context // the parent

	c *Conn
	// req is the request, in the call whose context this is.
	req *Request
	// reader is the reader state (reader.enter's) of the handler when it
	// runs on its connection's reader, else 0 (see leaveReader). It is set
	// before the handler runs and not changed after: a plain field, where
	// setting and clearing an atomic one around every call of a batch
	// cost two locked instructions per call.
	reader state
	// cl is the call the handler serves where it may answer it later,
	// with Relay (a concurrent single call); relayed: it did.
	cl      *call
	relayed bool
	slot    bool // the handler holds an in-flight slot (see Conn.lend)
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
// over HTTP POST, where no one could receive it. Outside a connection's
// handler, on a context made with [WithProgress] (a call run on behalf of
// a caller that gets progress its own way), it hands data to that
// function.
func Progress(ctx context.Context, data any) error {
	ri, ok := ctx.Value(ctxKey{}).(*reqInfo)
	if !ok {
		if fn := progressFunc(ctx); fn != nil {
			b, err := jsonx.Marshal(data)
			if err != nil {
				return err
			}
			fn(b)
		}
		return nil
	}
	if ri.req.IsNotification() {
		return nil
	}
	b, err := jsonx.Marshal(data)
	if err != nil {
		return err
	}
	params := make([]byte, 0, len(b)+len(ri.req.ID.raw)+16)
	params = append(params, `{"id":`...)
	params = append(params, ri.req.ID.raw...)
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
