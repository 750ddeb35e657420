package peer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Transport carries whole messages between two peers: a WebSocket (see
// [WebSocket]) in production, an in-memory pipe in tests (see [Pipe]).
//
// Read is called by one goroutine at a time, Write by one goroutine at a
// time (possibly concurrently with Read), and Close from any goroutine, any
// number of times. Read returns a message the caller then owns; Write must
// not keep msg after it returns. When the connection ends, Read returns an
// error, a *CloseError when the other side closed it with a code.
type Transport interface {
	Read(ctx context.Context) ([]byte, error)
	Write(ctx context.Context, msg []byte) error
	Close(code int, reason string) error
}

// Conn is one end of a symmetric JSON-RPC 2.0 connection: it calls methods
// on the other side and serves the methods of its Router, with any number of
// calls in flight in both directions.
//
// [Conn.Serve] runs the reader and must be called for anything to arrive.
// Each incoming call runs its handler on a goroutine of its own, so a slow
// handler delays no other call; replies and outgoing calls go through one
// bounded queue, written by at most one goroutine at a time. Responses are
// matched to pending calls by the reader itself, so a handler that calls
// back to its caller and waits cannot deadlock the connection.
//
// All methods are safe for concurrent use.
type Conn struct {
	t    Transport
	o    Options
	life context.Context // ends when the connection closes; bounds writes
	stop context.CancelFunc

	done    chan struct{} // closed when the reader, writer and handlers have stopped
	closing chan struct{} // closed when the connection starts closing

	mu          sync.Mutex
	closed      bool
	serving     bool
	cancelServe context.CancelFunc // ends the reader and handler contexts
	cause       error              // why the connection closed
	localClose  bool               // closed by Close, CloseWith or Shutdown
	nextID      uint64
	pending     map[uint64]*pendingCall
	inflight    map[string]*call // calls being served, by raw request id
	running     int              // handlers running, for MaxInFlight
	batches     int              // batch goroutines not yet done
	tail        chan struct{}    // done channel of the last serial call
	draining    bool             // Shutdown called: refuse new calls
	idle        chan struct{}    // closed when draining and nothing is left

	// The outbound queue. writing is true while a goroutine writes it.
	queue   []outMsg
	spare   []outMsg
	writing bool
	posted  int           // messages queued by Post
	room    chan struct{} // closed when the queue has room again

	wg   sync.WaitGroup // workers (handlers, batches, the writer) and the closer
	work chan func()    // hands a task to an idle worker; see spawnLocked
	// workers counts the worker goroutines alive, parked ones included.
	workers atomic.Int32
}

type outMsg struct {
	b    []byte
	post bool
}

type pendingCall struct {
	ch       chan reply
	progress func(json.RawMessage)
}

type reply struct {
	result []byte
	err    error
}

// NewConn returns a connection over t. Call [Conn.Serve] to start it.
func NewConn(t Transport, opts *Options) *Conn {
	c := &Conn{
		t:        t,
		o:        opts.withDefaults(),
		done:     make(chan struct{}),
		closing:  make(chan struct{}),
		pending:  make(map[uint64]*pendingCall),
		inflight: make(map[string]*call),
		work:     make(chan func()),
	}
	c.life, c.stop = context.WithCancel(context.Background())
	return c
}

// Serve reads and dispatches messages until the connection ends, then
// waits for the handlers it started to return. Handler contexts derive
// from ctx, so values put in ctx (an authenticated identity, say) reach
// every handler, and cancelling ctx closes the connection with 1001.
//
// Serve returns nil when the connection was closed by this side (Close,
// CloseWith, Shutdown), and otherwise the error that ended it, such as a
// *CloseError from the other side. Serve may be called once.
func (c *Conn) Serve(ctx context.Context) error {
	c.mu.Lock()
	if c.serving || c.closed {
		c.mu.Unlock()
		return fmt.Errorf("%w: Serve called twice or after Close", ErrClosed)
	}
	c.serving = true
	hctx, cancel := context.WithCancel(ctx)
	c.cancelServe = cancel // closing ends the handlers
	c.mu.Unlock()
	defer cancel()

	// Cancelling ctx closes the connection with 1001. Reads are not given
	// ctx: a transport may tear the connection down when a read's context
	// ends (coder/websocket does), and the close frame must get out first.
	// Closing the transport is what ends the read.
	stop := context.AfterFunc(ctx, func() {
		c.teardown(context.Cause(ctx), CloseGoingAway, "going away")
	})
	defer stop()
	rctx := context.WithoutCancel(ctx)
	for {
		msg, err := c.t.Read(rctx)
		if err != nil {
			c.teardown(err, CloseNormal, "")
			break
		}
		if len(msg) > c.o.MaxMessage {
			c.teardown(&CloseError{Code: CloseTooBig, Reason: "message too big"}, CloseTooBig, "message too big")
			break
		}
		c.dispatch(hctx, msg)
	}
	c.wg.Wait()
	close(c.done)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.localClose {
		return nil
	}
	return c.cause
}

// Closing returns a channel closed as soon as the connection starts
// closing, for whatever reason; [Conn.Err] then tells why.
func (c *Conn) Closing() <-chan struct{} { return c.closing }

// Done returns a channel closed once the connection has closed and its
// reader, writer and handlers have all stopped.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err returns why the connection closed (wrapping ErrClosed when this side
// closed it), or nil while it is open.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cause
}

// Close closes the connection with code 1000. Pending calls fail with
// ErrClosed and handler contexts are cancelled. Close does not wait for
// handlers to return; [Conn.Done] tells when they have.
func (c *Conn) Close() error {
	return c.CloseWith(CloseNormal, "")
}

// CloseWith closes the connection with a WebSocket close code and reason.
func (c *Conn) CloseWith(code int, reason string) error {
	c.teardown(ErrClosed, code, reason)
	return nil
}

// Shutdown closes the connection gracefully: new calls are refused with
// -32004, calls in flight run to completion and their replies are written,
// then the connection closes with 1001 (going away). If ctx ends first,
// the connection is closed at once and Shutdown returns ctx.Err().
func (c *Conn) Shutdown(ctx context.Context) error {
	c.mu.Lock()
	if !c.draining {
		c.draining = true
		c.idle = make(chan struct{})
		c.checkIdleLocked()
	}
	idle := c.idle
	c.mu.Unlock()
	var err error
	select {
	case <-idle:
	case <-c.closing:
	case <-ctx.Done():
		err = ctx.Err()
	}
	c.teardown(ErrClosed, CloseGoingAway, "going away")
	return err
}

// checkIdleLocked closes c.idle when a draining connection has nothing
// left to run or write.
func (c *Conn) checkIdleLocked() {
	if c.draining && c.running == 0 && c.batches == 0 && len(c.queue) == 0 && !c.writing {
		select {
		case <-c.idle:
		default:
			close(c.idle)
		}
	}
}

// teardown closes the connection once, for the given cause.
func (c *Conn) teardown(cause error, code int, reason string) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	if cause == nil {
		cause = ErrClosed
	}
	c.localClose = cause == ErrClosed
	c.cause = cause
	if !errors.Is(cause, ErrClosed) {
		c.cause = fmt.Errorf("%w: %w", ErrClosed, cause)
	}
	pending := c.pending
	c.pending = nil
	c.queue = nil
	if c.room != nil {
		close(c.room)
		c.room = nil
	}
	close(c.closing)
	serving := c.serving
	if c.cancelServe != nil {
		c.cancelServe()
	}
	// Closing a WebSocket writes the close frame after the frame being
	// written, then waits for the other side's; do it on a goroutine so
	// that no caller (a publisher, say) ever waits. Writes are cancelled
	// only then, so the close code reaches the other side.
	c.wg.Add(1)
	c.mu.Unlock()

	go func() {
		defer c.wg.Done()
		_ = c.t.Close(code, reason)
		c.stop()
	}()
	for _, p := range pending {
		p.ch <- reply{err: c.cause}
	}
	if !serving {
		go func() {
			c.wg.Wait()
			close(c.done)
		}()
	}
	if code != CloseNormal && code != CloseGoingAway {
		c.o.Logger.Debug("closing connection", zap.Int("code", code), zap.String("reason", reason))
	}
}

// dispatch handles one incoming message or batch. It runs on the reader
// goroutine and never blocks: handlers get goroutines of their own, and
// immediate replies are queued without waiting.
func (c *Conn) dispatch(ctx context.Context, frame []byte) {
	f, ok := parseFrame(frame, c.o.MaxBatch)
	if !ok {
		c.post(appendError(nil, nullJSON, errParse()))
		return
	}
	if !f.batch {
		m := &f.msgs[0]
		if m.isResponse() {
			c.deliver(m)
			return
		}
		call, reply := c.prepare(m)
		if reply != nil {
			c.post(reply)
		}
		if call != nil {
			c.start(ctx, call)
		}
		return
	}
	if len(f.msgs) == 0 || f.tooBig {
		c.post(appendError(nil, nullJSON, errInvalidRequest()))
		return
	}
	var calls []*call
	var replies [][]byte
	for i := range f.msgs {
		m := &f.msgs[i]
		if m.isResponse() {
			c.deliver(m)
			continue
		}
		call, reply := c.prepare(m)
		if reply != nil {
			replies = append(replies, reply)
		}
		if call == nil {
			continue
		}
		if IsInline(call.h) {
			// Inline elements run here, in order, like single messages.
			if out := run(c.inlineContext(ctx, call), &c.o, call); out != nil {
				replies = append(replies, out)
			}
			continue
		}
		calls = append(calls, call)
	}
	if len(calls) == 0 {
		if len(replies) > 0 {
			c.post(appendBatch(nil, replies))
		}
		return
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.batches++
	c.spawnLocked(func() {
		replies := runBatch(ctx, &c.o, calls, replies,
			func(cl *call) (context.Context, bool) { return c.acquire(ctx, cl) },
			c.release)
		if len(replies) > 0 {
			_ = c.send(c.life, appendBatch(nil, replies))
		}
		c.mu.Lock()
		c.batches--
		c.checkIdleLocked()
		c.mu.Unlock()
	})
	c.mu.Unlock()
}

// prepare handles the system methods that need this connection, then
// validates and routes like the package-level prepare.
func (c *Conn) prepare(m *message) (*call, []byte) {
	if m.validRequest() {
		cancel := keyIs(m.method, "rpc.cancel")
		if cancel || keyIs(m.method, "rpc.progress") {
			var p progressParams
			if json.Unmarshal(m.params, &p) == nil {
				if cancel {
					c.cancelInflight(p.ID)
				} else {
					c.progress(p)
				}
			}
			if m.hasID {
				return nil, appendResult(nil, m.id, emptyObject)
			}
			return nil, nil
		}
	}
	return prepare(&c.o, m)
}

// cancelInflight cancels the handler serving the call with the given id.
func (c *Conn) cancelInflight(id json.RawMessage) {
	if !validID(id) {
		return
	}
	c.mu.Lock()
	cl := c.inflight[string(id)]
	c.mu.Unlock()
	if cl != nil {
		cl.cancel(errCancelled)
	}
}

// progress hands rpc.progress data to the call it belongs to. The
// callback is the caller's code running on the reader: a panic in it is
// recovered and logged, so it cannot take the connection down.
func (c *Conn) progress(p progressParams) {
	id, ok := parseOurID(p.ID)
	if !ok {
		return
	}
	c.mu.Lock()
	pc := c.pending[id]
	c.mu.Unlock()
	if pc == nil || pc.progress == nil {
		return
	}
	defer func() {
		if v := recover(); v != nil {
			c.o.Logger.Error("progress callback panicked", zap.Any("panic", v), zap.Stack("stack"))
		}
	}()
	pc.progress(p.Data)
}

// start runs one call on a goroutine of its own, or refuses it at once
// when MaxInFlight calls are running.
func (c *Conn) start(ctx context.Context, cl *call) {
	if IsInline(cl.h) {
		if out := run(c.inlineContext(ctx, cl), &c.o, cl); out != nil {
			c.post(out)
		}
		return
	}
	hctx, ok := c.acquire(ctx, cl)
	if !ok {
		if !cl.req.IsNotification() {
			c.post(appendError(nil, []byte(cl.req.ID.raw), errOverloaded()))
		} else {
			c.o.Logger.Debug("notification dropped: too many in flight", zap.String("method", cl.req.Method))
		}
		return
	}
	var wait <-chan struct{}
	var done chan struct{}
	c.mu.Lock()
	if cl.serial {
		done = make(chan struct{})
		wait, c.tail = c.tail, done
	}
	c.spawnLocked(func() {
		if done != nil {
			defer close(done)
			if wait != nil {
				select {
				case <-wait:
				case <-hctx.Done():
					// Cancelled while waiting its turn: answer without
					// running, but hold the line, so that the call behind
					// this one still starts only after the one ahead.
					if !cl.req.IsNotification() {
						_ = c.send(c.life, appendError(nil, []byte(cl.req.ID.raw), ToError(hctx.Err())))
					}
					c.release(cl)
					<-wait
					return
				}
			}
		}
		out := run(hctx, &c.o, cl)
		if out != nil {
			_ = c.send(c.life, out)
		}
		c.release(cl)
	})
	c.mu.Unlock()
}

// inlineContext is the context of an inline handler: no slot, and no
// cancellation of its own, since rpc.cancel cannot arrive while it runs.
func (c *Conn) inlineContext(ctx context.Context, cl *call) context.Context {
	return context.WithValue(ctx, ctxKey{}, &reqInfo{c: c, id: cl.req.ID})
}

// acquire takes an in-flight slot for cl and returns the handler's context.
func (c *Conn) acquire(ctx context.Context, cl *call) (context.Context, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.running >= c.o.MaxInFlight {
		return nil, false
	}
	if c.draining {
		return nil, false
	}
	c.running++
	hctx := context.WithValue(ctx, ctxKey{}, &reqInfo{c: c, id: cl.req.ID})
	if !cl.req.IsNotification() {
		var cancel context.CancelCauseFunc
		hctx, cancel = context.WithCancelCause(hctx)
		cl.cancel = cancel
		if _, dup := c.inflight[cl.req.ID.raw]; !dup {
			c.inflight[cl.req.ID.raw] = cl // a duplicate id cannot be cancelled
		}
	}
	return hctx, true
}

// release gives back cl's slot once its reply is queued.
func (c *Conn) release(cl *call) {
	c.mu.Lock()
	c.running--
	if c.inflight[cl.req.ID.raw] == cl {
		delete(c.inflight, cl.req.ID.raw)
	}
	c.checkIdleLocked()
	c.mu.Unlock()
	if cl.cancel != nil {
		cl.cancel(nil)
	}
}

// deliver hands a response to the call waiting for it. Responses to
// unknown ids (a call that timed out, say) are dropped.
func (c *Conn) deliver(m *message) {
	id, ok := parseOurID(m.id)
	if !ok {
		c.o.Logger.Debug("response with unknown id dropped", zap.ByteString("id", m.id))
		return
	}
	c.mu.Lock()
	p := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if p == nil {
		c.o.Logger.Debug("response with unknown id dropped", zap.ByteString("id", m.id))
		return
	}
	p.ch <- decodeReply(m)
}

func decodeReply(m *message) reply {
	switch {
	case !m.version || (m.result != nil && m.err != nil):
		return reply{err: errors.New("peer: invalid response")}
	case m.err != nil:
		e := new(Error)
		if err := json.Unmarshal(m.err, e); err != nil || e.Message == "" && e.Code == 0 {
			return reply{err: errors.New("peer: invalid error object in response")}
		}
		return reply{err: e}
	}
	return reply{result: m.result}
}

// parseOurID reads an id this side generated: a positive decimal integer.
func parseOurID(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if !isDigit(c) {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	return n, true
}

// Outbound queue.

// post queues b from the reader goroutine, which must never wait: when the
// queue is over twice its bound (the other side sends and never reads),
// the connection is closed as too slow.
func (c *Conn) post(b []byte) {
	c.mu.Lock()
	if !c.closed && len(c.queue) >= 2*c.o.MaxQueue {
		c.mu.Unlock()
		c.o.Logger.Warn("peer too slow: outbound queue full")
		c.teardown(ErrTooSlow, ClosePolicy, "too slow")
		return
	}
	c.enqueueLocked(b, false, false)
}

// Post queues a pre-encoded message (a hub event, say) without waiting.
// If MaxQueue posted messages are already waiting, the other side is not
// keeping up: the connection is closed with 1008 and Post returns
// ErrTooSlow itself, unwrapped, from that one call only, so a caller can
// count each slow peer once. Calls after the connection closed return its
// close cause (wrapping ErrClosed, and ErrTooSlow if that was the cause).
// Post must not be given a message it will modify later.
func (c *Conn) Post(msg []byte) error {
	c.mu.Lock()
	if c.closed {
		err := c.cause
		c.mu.Unlock()
		return err
	}
	if c.posted >= c.o.MaxQueue {
		c.mu.Unlock()
		c.o.Logger.Warn("peer too slow: outbound queue full")
		c.teardown(ErrTooSlow, ClosePolicy, "too slow")
		return ErrTooSlow
	}
	c.posted++
	c.enqueueLocked(msg, true, false)
	return nil
}

// send queues b, waiting while the queue is full. If no one is writing,
// the calling goroutine writes b itself, then hands any messages queued
// meanwhile to a writer goroutine.
func (c *Conn) send(ctx context.Context, b []byte) error {
	c.mu.Lock()
	for !c.closed && len(c.queue) >= c.o.MaxQueue {
		if c.room == nil {
			c.room = make(chan struct{})
		}
		room := c.room
		c.mu.Unlock()
		select {
		case <-room:
		case <-ctx.Done():
			return ctx.Err()
		}
		c.mu.Lock()
	}
	if c.closed {
		err := c.cause
		c.mu.Unlock()
		return err
	}
	c.enqueueLocked(b, false, true)
	return nil
}

// enqueueLocked appends to the queue and makes sure someone writes it.
// It is called with c.mu held and releases it.
func (c *Conn) enqueueLocked(b []byte, post, inline bool) {
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.queue = append(c.queue, outMsg{b: b, post: post})
	if c.writing {
		c.mu.Unlock()
		return
	}
	c.writing = true
	if inline {
		c.mu.Unlock()
		c.write(true)
		return
	}
	c.spawnLocked(c.writeQueued)
	c.mu.Unlock()
}

// write drains the queue. An inline writer (a caller of send) writes what
// is queued now and hands the rest to a writer goroutine, so no caller
// writes other goroutines' messages for long.
func (c *Conn) write(inline bool) {
	for {
		c.mu.Lock()
		if c.closed || len(c.queue) == 0 {
			c.writing = false
			c.checkIdleLocked()
			c.mu.Unlock()
			return
		}
		batch := c.queue
		c.queue, c.spare = c.spare[:0], nil
		for _, m := range batch {
			if m.post {
				c.posted--
			}
		}
		if c.room != nil {
			close(c.room)
			c.room = nil
		}
		c.mu.Unlock()

		for i, m := range batch {
			if err := c.t.Write(c.life, m.b); err != nil {
				c.teardown(err, CloseInternalError, "write failed")
				return
			}
			batch[i] = outMsg{}
		}

		c.mu.Lock()
		if c.spare == nil {
			c.spare = batch[:0]
		}
		if inline && !c.closed && len(c.queue) > 0 {
			c.spawnLocked(c.writeQueued)
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
	}
}

// writeQueued is the task of a writer goroutine.
func (c *Conn) writeQueued() { c.write(false) }

// Workers.
//
// Handlers, batches and the writer run on worker goroutines. A worker that
// finishes its task stays parked, and the next task goes to it rather than
// to a new goroutine: a new goroutine starts with a small stack and grows
// it, by copying, on its way into a handler's JSON decoding, which costs
// more than the rest of a call's dispatch; a parked worker already has the
// stack it needs. A worker ends once a whole workerIdle has passed without
// a task, so an idle connection has no workers left.

// workerIdle is the period a worker must spend without a task to end.
const workerIdle = time.Second

// spawnLocked runs fn on an idle worker, or on a new one. It is called
// with c.mu held, by the reader or by a goroutine the WaitGroup counts, or
// with the connection open, so that the WaitGroup is never added to after
// it drained.
func (c *Conn) spawnLocked(fn func()) {
	select {
	case c.work <- fn:
		return
	default:
	}
	c.wg.Add(1)
	go c.worker(fn)
}

// worker runs fn, then whatever tasks it is handed, until a period of
// workerIdle passes without one or the connection closes. The timer is
// armed once per period, not once per task: arming a timer can wake the
// runtime's network poller, a system call.
func (c *Conn) worker(fn func()) {
	c.workers.Add(1)
	defer c.wg.Done()
	defer c.workers.Add(-1)
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	busy := false // a task ran in this period
	for {
		if fn != nil {
			fn()
			fn = nil // let the task's captures go while parked
			busy = true
		}
		select {
		case fn = <-c.work:
		case <-idle.C:
			if !busy {
				return
			}
			busy = false
			idle.Reset(workerIdle)
		case <-c.closing:
			return
		}
	}
}

// Calling.

// Call calls method on the other side with params (nil, or anything that
// encodes to a JSON array or object; a json.RawMessage is sent as is) and
// decodes the result into result (a pointer; nil discards it, and a
// *json.RawMessage receives the raw JSON).
//
// Call returns an *Error when the other side answered with one. If ctx
// ends first, Call sends rpc.cancel for the call and returns ctx.Err().
// A ctx without a deadline gets Options.CallTimeout. When the connection
// closes, Call returns an error wrapping ErrClosed; the call may or may
// not have run on the other side.
func (c *Conn) Call(ctx context.Context, method string, params, result any) error {
	b, err := marshalParams(params)
	if err != nil {
		return err
	}
	if _, ok := ctx.Deadline(); !ok && c.o.CallTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.o.CallTimeout)
		defer cancel()
	}
	p := &pendingCall{ch: make(chan reply, 1), progress: progressFunc(ctx)}
	c.mu.Lock()
	if c.closed {
		err := c.cause
		c.mu.Unlock()
		return err
	}
	c.nextID++
	id := c.nextID
	c.pending[id] = p
	c.mu.Unlock()

	var idBuf [20]byte
	idText := strconv.AppendUint(idBuf[:0], id, 10)
	if err := c.send(ctx, appendRequest(nil, idText, method, b)); err != nil {
		c.forget(id)
		return err
	}
	select {
	case r := <-p.ch:
		if r.err != nil {
			return r.err
		}
		if err := unmarshalResult(r.result, result); err != nil {
			return fmt.Errorf("peer: decode result of %s: %w", method, err)
		}
		return nil
	case <-ctx.Done():
		if c.forget(id) {
			c.cancelRemote(idText)
		}
		return ctx.Err()
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
// not wait: the caller has given up already.
func (c *Conn) cancelRemote(id []byte) {
	params := append(append([]byte(`{"id":`), id...), '}')
	c.post(appendRequest(nil, nil, "rpc.cancel", params))
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

// Handler-side context.

type ctxKey struct{}

type progressKey struct{}

type reqInfo struct {
	c  *Conn
	id ID
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

// RequestID returns the id of the request a handler is serving (the zero
// ID for a notification or outside a handler).
func RequestID(ctx context.Context) ID {
	if ri, ok := ctx.Value(ctxKey{}).(*reqInfo); ok {
		return ri.id
	}
	return ID{}
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
