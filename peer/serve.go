package peer

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// This file turns decoded messages into handler runs and handler results
// into replies. Conn and Respond share it.

// call is a request ready to run.
type call struct {
	req  Request
	ctx  handlerCtx // its handler's context, on a connection
	h    Handler
	mode Mode
}

// prepare validates a request and finds its handler. It returns either a
// call to run, cl filled in (or a new call if cl is nil), or an immediate
// reply (nil when there is nothing to send, as for any notification). The
// method and id strings come from t. System methods that need a
// connection (rpc.cancel, rpc.progress) are handled by the caller before
// this.
func prepare(o *Options, m *message, t frameText, cl *call) (*call, []byte) {
	if !m.validRequest() {
		return nil, appendError(nil, m.replyID(), errInvalidRequest())
	}
	method, ok := t.unquote(m.method)
	if !ok {
		return nil, appendError(nil, m.replyID(), errInvalidRequest())
	}
	if method == "rpc.ping" {
		if !m.hasID {
			return nil, nil
		}
		return nil, appendResult(nil, m.id, emptyObject)
	}
	h, mode := t.lookup(o.Router, method)
	if h == nil {
		if o.OnServe != nil {
			o.OnServe("", CodeMethodNotFound, 0)
		}
		if !m.hasID {
			return nil, nil
		}
		return nil, appendError(nil, m.id, errMethodNotFound())
	}
	if cl == nil {
		cl = new(call)
	}
	cl.h, cl.mode = h, mode
	cl.req.Method = method
	cl.req.Params = m.params
	if m.hasID {
		cl.req.ID = ID{m.idString()}
	}
	return cl, nil
}

var emptyObject = []byte("{}")

// run calls c's handler and appends its reply to dst (nothing for a
// notification). When o.OnServe is set, it is told of the call, which
// started at start (monotime), and run returns the time it ended (else
// zero: the clock is read for OnServe only).
func run(ctx context.Context, o *Options, c *call, dst []byte, start int64) ([]byte, int64) {
	b, err := serveResult(ctx, o.Logger, c)
	if err == errRelayed { //nolint:errorlint // our own sentinel, returned as is
		return dst, 0 // the answer, and OnServe, come with Relay's
	}
	var code Code
	switch {
	case err == nil:
		if !c.req.IsNotification() {
			dst = appendResult(dst, []byte(c.req.ID.raw), b)
		}
	default:
		e := ToError(err)
		code = e.Code
		if !c.req.IsNotification() {
			dst = appendError(dst, []byte(c.req.ID.raw), e)
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
	var end int64
	if o.OnServe != nil {
		end = monotime()
		o.OnServe(c.req.Method, code, time.Duration(end-start))
	}
	return dst, end
}

// now is the time a call starts (monotime), for OnServe: zero without
// OnServe. It reads the monotonic clock alone, as run does: time.Now
// reads the wall clock too, which costs as much again.
func (o *Options) now() int64 {
	if o.OnServe == nil {
		return 0
	}
	return monotime()
}

// rawServer is a handler whose results are raw JSON already ([Func]'s
// when R is json.RawMessage): run takes them without boxing them in an
// any, which would cost an allocation per call.
type rawServer interface {
	serveRaw(ctx context.Context, req *Request) (json.RawMessage, error)
}

// serveResult runs c's handler and encodes its result. A panic, in the
// handler or in the encoding, becomes -32603, and so does a result that
// cannot be encoded (unless the encoding fails with an *Error).
func serveResult(ctx context.Context, log *zap.Logger, c *call) (b []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			log.Error("handler panicked",
				zap.String("method", c.req.Method),
				zap.String("id", c.req.ID.raw),
				zap.Any("panic", p),
				zap.Stack("stack"))
			b, err = nil, errInternal()
		}
	}()
	if rs, ok := c.h.(rawServer); ok {
		var raw json.RawMessage
		if raw, err = rs.serveRaw(ctx, &c.req); err != nil {
			return nil, err
		}
		b, err = marshalRaw(raw)
	} else {
		var res any
		if res, err = c.h.ServeRPC(ctx, &c.req); err != nil {
			return nil, err
		}
		b, err = marshalResult(res)
	}
	if err != nil {
		log.Error("cannot encode result", zap.String("method", c.req.Method), zap.Error(err))
		if _, ok := err.(*Error); !ok {
			err = errInternal()
		}
	}
	return b, err
}

// batch is an incoming batch being served: its calls, and the array of
// its replies, built in one buffer.
//
// The goroutine that runs a batch runs its calls one after the other and
// appends each reply to the array: a batch of quick calls costs no
// goroutine, no hand-off and no buffer per call. When the batch takes
// long (a slow call, or many calls), up to o.BatchWorkers-1 helpers join
// in and take the calls not yet started (spread), so that a slow call
// does not hold up the others for long; each helper builds a part of the
// array, added to it at the end. Replies are thus in the order of the
// calls unless helpers joined in (JSON-RPC lets a batch's replies come in
// any order).
//
// A batch that runs on its connection's reader is spread by the reader's
// watchdog, when it takes the reader from it (see reader.move and
// reader.batch); any other by a timer, after batchSpread. A timer per
// batch costs a wake-up of the runtime's network poller, which on a busy
// reader is a thread woken and put back to sleep for every batch.
type batch struct {
	o    *Options
	ctx  context.Context // the handlers' parent
	conn *Conn           // nil for Respond, whose handlers get ctx itself
	// calls are the batch's calls in order, in one allocation. Inline
	// ones ran already, as the batch was read.
	calls   []call
	pending int          // calls that are not Inline
	out     []byte       // '[' and the replies so far, comma-separated
	next    atomic.Int64 // index in calls of the next call to start
	// reader is the reader state (reader.enter's) while the batch runs on
	// its connection's reader, else 0. The calls the batch's goroutine
	// runs get it (see leaveReader); a helper's do not.
	reader state

	wg    sync.WaitGroup // the helpers
	mu    sync.Mutex     // after readerWatch.mu (see Conn.mu)
	done  bool           // the batch's goroutine ran out of calls: no spreading
	parts [][]byte       // the helpers' replies, one part each; set by spread
}

// newBatch returns a batch with room for n calls and a reply array sized
// for a reply about as long as the request, size bytes.
func newBatch(ctx context.Context, o *Options, conn *Conn, n, size int) *batch {
	out := make([]byte, 1, size+1)
	out[0] = '['
	return &batch{o: o, ctx: ctx, conn: conn, calls: make([]call, 0, n), out: out}
}

// slot returns the next free call of the batch, to prepare.
func (b *batch) slot() *call {
	b.calls = b.calls[:len(b.calls)+1]
	return &b.calls[len(b.calls)-1]
}

// unslot gives back the call slot returned last, which did not become a
// call to run.
func (b *batch) unslot() {
	b.calls[len(b.calls)-1] = call{}
	b.calls = b.calls[:len(b.calls)-1]
}

// add adds an encoded reply to the array.
func (b *batch) add(reply []byte) {
	if reply != nil {
		b.out = append(comma(b.out), reply...)
	}
}

// comma appends the separator that the next element of the array in dst
// needs: none after the opening bracket or in an empty part.
func comma(dst []byte) []byte {
	if len(dst) > 0 && dst[len(dst)-1] != '[' {
		dst = append(dst, ',')
	}
	return dst
}

// reply returns the reply array, or nil when it is empty.
func (b *batch) reply() []byte {
	if len(b.out) == 1 {
		return nil
	}
	return append(b.out, ']')
}

// runInline runs an Inline call at once, as the batch is read, in order.
func (b *batch) runInline(ctx context.Context, cl *call) {
	n := len(b.out)
	b.out, _ = run(ctx, b.o, cl, comma(b.out), b.o.now())
	if len(b.out) == n+1 {
		b.out = b.out[:n] // no reply: no comma
	}
}

// run runs the calls of the batch (see batch).
func (b *batch) run() {
	if b.helpers() <= 0 {
		b.out = b.work(b.out, b.reader)
		return
	}
	if b.reader == 0 {
		spread := time.AfterFunc(batchSpread, b.spread)
		b.out = b.work(b.out, 0)
		spread.Stop()
	} else {
		b.out = b.work(b.out, b.reader)
	}
	b.mu.Lock()
	b.done = true
	b.mu.Unlock()
	b.wg.Wait()
	for _, p := range b.parts {
		if len(p) > 0 {
			b.out = append(comma(b.out), p...)
		}
	}
}

// helpers is how many helpers may join in.
func (b *batch) helpers() int { return min(b.o.BatchWorkers, b.pending) - 1 }

// spread starts the batch's helpers, unless they started already or the
// batch's own goroutine has run out of calls. Any goroutine may call it.
func (b *batch) spread() {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := b.helpers()
	if b.done || b.parts != nil || n <= 0 {
		return
	}
	b.parts = make([][]byte, n)
	for i := range n {
		b.wg.Go(func() { b.parts[i] = b.work(nil, 0) })
	}
}

// work runs calls not yet started, one after the other, until there are
// none left, and appends their replies to dst. reader is the reader state
// of the goroutine running work if it is its connection's reader.
func (b *batch) work(dst []byte, reader state) []byte {
	start := b.o.now()
	for {
		i := int(b.next.Add(1)) - 1
		if i >= len(b.calls) {
			return dst
		}
		cl := &b.calls[i]
		if cl.mode == Inline {
			continue
		}
		n := len(dst)
		dst = comma(dst)
		switch {
		case b.conn == nil:
			dst, start = run(b.ctx, b.o, cl, dst, start)
		case cl.ctx.cancelled():
			// Cancelled before it started (rpc.cancel, or Shutdown at
			// the end of its grace period): answered without running.
			if !cl.req.IsNotification() {
				dst = appendError(dst, []byte(cl.req.ID.raw), ToError(cl.ctx.Err()))
			}
			cl.ctx.end()
		default:
			cl.ctx.reader = reader
			dst, start = run(&cl.ctx, b.o, cl, dst, start)
			cl.ctx.end()
		}
		if len(dst) == n+1 {
			dst = dst[:n] // no reply: no comma
		}
	}
}

// batchSpread is how long a batch that does not run on a reader runs its
// calls one after the other on one goroutine before helpers join in.
const batchSpread = 500 * time.Microsecond

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
		c, reply := prepareNoConn(&o, &f.msgs[0], frameText{}, nil)
		if c == nil {
			return reply
		}
		out, _ := run(ctx, &o, c, nil, o.now())
		return out
	case f.tooBig:
		if o.OnLimit != nil {
			o.OnLimit(LimitBatch)
		}
		fallthrough
	case len(f.msgs) == 0:
		return appendError(nil, nullJSON, errInvalidRequest())
	}
	batchIDs(f.msgs)
	t := frameText{cache: new(lookup), last: new(string)}
	b := newBatch(ctx, &o, nil, len(f.msgs), len(body))
	for i := range f.msgs {
		c, reply := prepareNoConn(&o, &f.msgs[i], t, b.slot())
		switch {
		case c == nil:
			b.unslot()
			b.add(reply)
		case c.mode == Inline: // in order, as on a connection
			b.runInline(ctx, c)
		default:
			b.pending++
		}
	}
	if b.pending > 0 {
		b.run()
	}
	return b.reply()
}

// Reply returns the result of the reply body that [Respond] returned for
// one call, or its error, a *[Error]. A body that is not one reply gives
// another error.
func Reply(body []byte) (json.RawMessage, error) {
	// The body is Respond's, not a stranger's: its nesting needs no bound.
	f, ok := parseFrame(nil, body, 1, math.MaxInt)
	if !ok || f.batch || !f.msgs[0].isResponse() {
		return nil, errors.New("peer: not a reply")
	}
	r := decodeReply(&f.msgs[0])
	return r.result, r.err
}

// prepareNoConn is prepare for Respond: responses are ignored (there are no
// pending calls), and rpc.cancel and rpc.progress are accepted and do nothing.
func prepareNoConn(o *Options, m *message, t frameText, cl *call) (*call, []byte) {
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
	return prepare(o, m, t, cl)
}

// progressParams are the params of rpc.cancel (only id) and rpc.progress.
type progressParams struct {
	ID   json.RawMessage `json:"id"`
	Data json.RawMessage `json:"data,omitempty"`
}
