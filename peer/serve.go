package peer

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// This file turns decoded messages into handler runs and handler results
// into replies. Conn and Respond share it.

// call is a request ready to run.
type call struct {
	req    Request
	cancel context.CancelCauseFunc
	h      Handler
	mode   Mode
}

// prepare validates a request and finds its handler. It returns either a
// call to run or an immediate reply (nil when there is nothing to send,
// as for any notification). System methods that need a connection
// (rpc.cancel, rpc.progress) are handled by the caller before this. The
// call is taken from the front of *spare when it is not empty (a batch
// allocates its calls in one block), else allocated; spare may be nil.
func prepare(o *Options, m *message, spare *[]call) (*call, []byte) {
	if !m.validRequest() {
		return nil, appendError(nil, m.replyID(), errInvalidRequest())
	}
	method, ok := unquote(m.method)
	if !ok {
		return nil, appendError(nil, m.replyID(), errInvalidRequest())
	}
	if method == "rpc.ping" {
		if !m.hasID {
			return nil, nil
		}
		return nil, appendResult(nil, m.id, emptyObject)
	}
	h, mode := o.Router.Lookup(method)
	if h == nil {
		if o.OnServe != nil {
			o.OnServe("", CodeMethodNotFound, 0)
		}
		if !m.hasID {
			return nil, nil
		}
		return nil, appendError(nil, m.id, errMethodNotFound())
	}
	var c *call
	if spare != nil && len(*spare) > 0 {
		c, *spare = &(*spare)[0], (*spare)[1:]
	} else {
		c = new(call)
	}
	c.h, c.mode = h, mode
	c.req.Method = method
	c.req.Params = m.params
	if m.hasID {
		c.req.ID = ID{string(m.id)}
	}
	return c, nil
}

var emptyObject = []byte("{}")

// run calls the handler and encodes its reply (nil for a notification).
func run(ctx context.Context, o *Options, c *call) []byte {
	var start time.Time
	if o.OnServe != nil {
		start = time.Now()
	}
	res, err := safeServe(ctx, o.Logger, c)
	var out []byte
	var code Code
	if err == nil {
		var b []byte
		if b, err = marshalResult(res); err == nil && !c.req.IsNotification() {
			out = appendResult(nil, []byte(c.req.ID.raw), b)
		} else if err != nil {
			o.Logger.Error("cannot encode result", zap.String("method", c.req.Method), zap.Error(err))
			if _, ok := err.(*Error); !ok {
				err = errInternal()
			}
		}
	}
	if err != nil {
		e := ToError(err)
		code = e.Code
		if !c.req.IsNotification() {
			out = appendError(nil, []byte(c.req.ID.raw), e)
		} else if o.Logger.Core().Enabled(zap.DebugLevel) {
			// A notification has nobody to tell: say it here, so that a
			// handler refusing its params (a missing required field)
			// does not drop notifications unseen.
			o.Logger.Debug("notification failed",
				zap.String("method", c.req.Method),
				zap.Int("code", int(e.Code)),
				zap.String("error", e.Message))
		}
	}
	if o.OnServe != nil {
		o.OnServe(c.req.Method, code, time.Since(start))
	}
	return out
}

// safeServe runs the handler, turning a panic into -32603.
func safeServe(ctx context.Context, log *zap.Logger, c *call) (res any, err error) {
	defer func() {
		if p := recover(); p != nil {
			log.Error("handler panicked",
				zap.String("method", c.req.Method),
				zap.String("id", c.req.ID.raw),
				zap.Any("panic", p),
				zap.Stack("stack"))
			res, err = nil, errInternal()
		}
	}()
	return c.h.ServeRPC(ctx, &c.req)
}

// runBatch runs the calls of one batch and returns the replies: those
// given, then the calls', in the order of the calls. start returns the
// context of an element's handler, and finish is called once it returned.
//
// The calling goroutine runs the elements one after the other: a batch of
// quick calls costs no goroutine and no hand-off. When the batch is still
// running after batchSpread (a slow element, or many of them), up to
// o.BatchWorkers-1 helpers join in and take the elements not yet started,
// so that a slow element delays the others by batchSpread at most.
func runBatch(ctx context.Context, o *Options, calls []*call, replies [][]byte,
	start func(*call) context.Context, finish func(*call)) [][]byte {
	outs := make([][]byte, len(calls)) // element i's reply, written by one goroutine
	var next atomic.Int64
	work := func() {
		for {
			i := int(next.Add(1)) - 1
			if i >= len(calls) {
				return
			}
			c := calls[i]
			outs[i] = run(start(c), o, c)
			finish(c)
		}
	}
	if helpers := min(o.BatchWorkers, len(calls)) - 1; helpers > 0 {
		// wg counts the timer's function from now on, so that the helpers
		// it starts are added to wg before Wait can return.
		var wg sync.WaitGroup
		wg.Add(1)
		spread := time.AfterFunc(batchSpread, func() {
			defer wg.Done()
			for range helpers {
				wg.Go(work)
			}
		})
		work()
		if spread.Stop() {
			wg.Done() // the timer's function will not run
		}
		wg.Wait()
	} else {
		work()
	}
	replies = slices.Grow(replies, len(outs))
	for _, out := range outs {
		if out != nil {
			replies = append(replies, out)
		}
	}
	return replies
}

// batchSpread is how long a batch's elements run one after the other on
// one goroutine before helpers join in.
const batchSpread = 500 * time.Microsecond

// appendBatch encodes replies as a JSON array.
func appendBatch(dst []byte, replies [][]byte) []byte {
	n := len(replies) + 1
	for _, r := range replies {
		n += len(r)
	}
	dst = slices.Grow(dst, n)
	dst = append(dst, '[')
	for i, r := range replies {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, r...)
	}
	return append(dst, ']')
}

// Respond serves one HTTP POST body (a request, a notification or a batch)
// with the router and limits of opts, and returns the reply body, or nil
// when there is nothing to send back (HTTP 204). There is no connection:
// [ConnFromContext] returns nil in handlers, [Progress] does nothing, and
// rpc.cancel has nothing to cancel.
func Respond(ctx context.Context, body []byte, opts *Options) []byte {
	o := opts.withDefaults()
	f, ok := parseFrame(nil, body, o.MaxBatch, o.MaxDepth)
	switch {
	case f.tooDeep:
		if o.OnLimit != nil {
			o.OnLimit(LimitDepth)
		}
		return appendError(nil, nullJSON, errTooDeep(o.MaxDepth))
	case !ok:
		return appendError(nil, nullJSON, errParse())
	case !f.batch:
		c, reply := prepareNoConn(&o, &f.msgs[0], nil)
		if c == nil {
			return reply
		}
		return run(ctx, &o, c)
	case f.tooBig:
		if o.OnLimit != nil {
			o.OnLimit(LimitBatch)
		}
		fallthrough
	case len(f.msgs) == 0:
		return appendError(nil, nullJSON, errInvalidRequest())
	}
	var calls []*call
	var replies [][]byte
	spare := make([]call, len(f.msgs))
	for i := range f.msgs {
		c, reply := prepareNoConn(&o, &f.msgs[i], &spare)
		switch {
		case c == nil:
			if reply != nil {
				replies = append(replies, reply)
			}
		case c.mode == Inline: // in order, as on a connection
			if out := run(ctx, &o, c); out != nil {
				replies = append(replies, out)
			}
		default:
			calls = append(calls, c)
		}
	}
	if len(calls) > 0 {
		replies = runBatch(ctx, &o, calls, replies,
			func(*call) context.Context { return ctx },
			func(*call) {})
	}
	if len(replies) == 0 {
		return nil
	}
	return appendBatch(nil, replies)
}

// prepareNoConn is prepare for Respond: responses are ignored (there are no
// pending calls), and rpc.cancel and rpc.progress are accepted and do nothing.
func prepareNoConn(o *Options, m *message, spare *[]call) (*call, []byte) {
	if m.isResponse() {
		return nil, nil
	}
	if m.validRequest() {
		if keyIs(m.method, "rpc.cancel") || keyIs(m.method, "rpc.progress") {
			if m.hasID {
				return nil, appendResult(nil, m.id, emptyObject)
			}
			return nil, nil
		}
	}
	return prepare(o, m, spare)
}

// progressParams are the params of rpc.cancel (only id) and rpc.progress.
type progressParams struct {
	ID   json.RawMessage `json:"id"`
	Data json.RawMessage `json:"data,omitempty"`
}
