package peer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-rpc/switchboard/internal/transport"
	"go.uber.org/zap"
	"golang.org/x/time/rate"
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
// Incoming calls run as if each had a goroutine of its own: a slow handler
// holds up no other call for more than a few milliseconds (quick ones run
// on the reader itself, see docs/peer.md); replies and outgoing calls go through one
// bounded queue, written by at most one goroutine at a time. Responses are
// matched to pending calls by the reader itself, so a handler that calls
// back to its caller and waits cannot deadlock the connection.
//
// All methods are safe for concurrent use.
type Conn struct {
	t    Transport
	o    Options
	out  outbox          // replies, calls and notifications on their way out
	pool workers         // the goroutines that run handlers, batches and the writer
	life context.Context // ends when the connection closes; bounds writes
	stop context.CancelFunc

	done     chan struct{}  // closed when the reader, writer and handlers have stopped
	closing  chan struct{}  // closed when the connection starts closing
	readDone chan struct{}  // closed when the reader has stopped reading
	wg       sync.WaitGroup // every goroutine the connection starts

	// draining mirrors mu-guarded draining, for the outbox's drained hook
	// and the reader.
	drainingFlag atomic.Bool

	// role is the reader role and all of its state (reader.go, role.go),
	// handed to whoever holds it.
	role *reader

	// For Ping: the transport's pings (see transport.Caps), when it has
	// them; messages read, and the reader's waits (see pause); for
	// PingIdle, their sum at its previous call.
	ping       func(context.Context) error
	expectPong func() (payload []byte, pong <-chan struct{}, forget func())
	reads      atomic.Uint64
	pauses     atomic.Uint64
	paused     atomic.Bool
	pingMark   atomic.Uint64

	// mu guards the fields below. Lock order, for every lock of the
	// package: Conn.mu, then outbox.mu (c.out), then workers.mu (c.pool);
	// readerWatch.mu, then batch.mu. No other lock is taken while one of
	// these is held (handlerCtx.mu, Mux.mu and wsTransport.closing take
	// none), and none is held across a handler or a transport's Read.
	mu          sync.Mutex
	closed      bool
	serving     bool
	cancelServe context.CancelFunc // ends the reader and handler contexts
	cause       error              // why the connection closed
	localClose  bool               // closed by Close, CloseWith or Shutdown
	nextID      uint64
	pending     map[uint64]*pendingCall
	wk          *waker           // the poll waker (wake.go); nil: none (set once, by NewConn)
	timeouts    timeouts         // the CallTimeout of calls in pending (call.go)
	inflight    map[string]*call // calls being served, by raw request id
	batches     []*batch         // batches being served (their calls are not in inflight)
	running     int              // in-flight slots taken, for MaxInFlight
	lent        int              // slots lent by handlers waiting on their caller
	slotFreed   chan struct{}    // closed when a slot is freed, for the reader
	forwards    int              // calls of Forward waiting for their answer
	draining    bool             // Shutdown called: refuse new calls
	idle        chan struct{}    // closed when draining and nothing is left
}

// NewConn returns a connection over t. Call [Conn.Serve] to start it.
func NewConn(t Transport, opts *Options) *Conn {
	c := &Conn{
		t:        t,
		o:        opts.withDefaults(),
		done:     make(chan struct{}),
		readDone: make(chan struct{}),
		closing:  make(chan struct{}),
		pending:  make(map[uint64]*pendingCall),
		inflight: make(map[string]*call),
	}
	c.role = &reader{c: c}
	c.life, c.stop = context.WithCancel(context.Background())
	c.pool = workers{wg: &c.wg}
	k := capabilities(t)
	c.role.ahead, c.ping, c.expectPong = k.MessageWaiting, k.Ping, k.ExpectPong
	c.out = outbox{
		t:         t,
		gather:    k.Gather,
		writePing: k.WritePing,
		ctx:       c.life,
		limit:     c.o.MaxQueue,
		maxB:      int64(c.o.MaxQueueBytes),
		budget:    c.o.QueueBudget,
		stall:     c.o.WriteStall,
		wg:        &c.wg,
		fail:      c.writeFailed,
		drained:   c.outboxDrained,
		pause:     c.pause,
	}
	if c.o.Rate > 0 {
		c.role.limiter = rate.NewLimiter(rate.Limit(c.o.Rate), c.o.Burst)
	}
	if k.PollWake {
		c.wk = newWaker()
	}
	// The role passes to a caller waiting on the poll waker (see own.go),
	// unless busy connections take turns (Share) or the reader reads ahead.
	if k.Interrupt != nil && c.wk != nil && c.o.Share == nil && c.role.ahead == nil {
		c.role.own = newOwnRead(c, k.Interrupt)
	}
	return c
}

// capabilities returns what t can do beyond carrying messages: what it
// declares, if it is one of this module's, and its Ping method, if it has
// one.
func capabilities(t Transport) transport.Caps {
	var k transport.Caps
	if ct, ok := t.(transport.Capable); ok {
		k = ct.Capabilities()
	}
	if p, ok := t.(interface{ Ping(context.Context) error }); ok && k.Ping == nil {
		k.Ping = p.Ping
	}
	return k
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
	// The reader role starts here, on Serve's goroutine.
	c.role.ctx, c.role.hctx = context.WithoutCancel(ctx), hctx
	c.role.readLoop()
	select {
	case <-c.readDone:
	default:
		// The reading moved to another goroutine while this one ran a
		// handler: this one waits for the end.
		c.role.away.Store(true)
		<-c.readDone
	}
	c.wg.Wait()
	if c.role.own != nil && c.role.own.watchStop != nil {
		c.role.own.watchStop() // nobody reads any more (see own.go)
	}
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

// Err returns nil while the connection is open, and then why it closed:
// an error wrapping ErrClosed and a *CloseError with the code and reason
// the connection closed with, sent by this side or received from the
// other, and the error that caused it, if any (ErrTooSlow, a transport
// error). Once [Conn.Done] is closed, Err no longer changes.
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
	c.teardown(nil, code, reason)
	return nil
}

// Shutdown closes the connection gracefully: calls that arrive from now
// on are refused with -32005 (shutting down; they did not run), calls in
// flight run to completion and their replies are written, calls forwarded
// to the other side ([Conn.Forward]) get their answers, then the
// connection closes with 1001 (going away). If ctx ends first, the calls
// still running are cancelled, and answered -32002 if their handlers
// return within shutdownCancelWait; then the connection closes and
// Shutdown returns ctx.Err().
func (c *Conn) Shutdown(ctx context.Context) error {
	c.mu.Lock()
	if !c.draining {
		c.draining = true
		c.drainingFlag.Store(true)
		c.idle = make(chan struct{})
		c.wakeLocked() // a reader waiting for a slot refuses its call
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
		c.cancelAll(errCancelled)
		t := time.NewTimer(shutdownCancelWait)
		select {
		case <-idle:
		case <-c.closing:
		case <-t.C:
		}
		t.Stop()
	}
	c.teardown(nil, CloseGoingAway, "going away")
	return err
}

// shutdownCancelWait is how long Shutdown waits, once its grace period is
// over, for the handlers it cancelled to return, so that their callers get
// -32002 before the connection closes.
const shutdownCancelWait = 250 * time.Millisecond

// checkIdleLocked closes c.idle when a draining connection has nothing
// left to run or write.
func (c *Conn) checkIdleLocked() {
	if c.draining && c.running == 0 && c.lent == 0 && c.forwards == 0 && c.out.idle() {
		select {
		case <-c.idle:
		default:
			close(c.idle)
		}
	}
}

// teardown closes the connection once, sending code and reason, because
// of cause: nil when this side chose to close (Close, CloseWith,
// Shutdown), else what went wrong. The connection's error (Err) wraps
// ErrClosed, a *CloseError (cause's own, if it holds one: the code the
// other side sent, say; else code and reason), and cause.
func (c *Conn) teardown(cause error, code int, reason string) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.localClose = cause == nil
	var ce *CloseError
	switch {
	case cause == nil:
		c.cause = fmt.Errorf("%w: %w", ErrClosed, &CloseError{Code: code, Reason: reason})
	case errors.As(cause, &ce):
		c.cause = fmt.Errorf("%w: %w", ErrClosed, cause)
	default:
		c.cause = fmt.Errorf("%w: %w: %w", ErrClosed, &CloseError{Code: code, Reason: reason}, cause)
	}
	pending := c.pending
	c.pending = nil
	c.timeouts.stop()
	// Closed under c.mu, before the closer is added to c.wg: the outbox
	// starts no writer after this.
	c.out.close(c.cause)
	c.wakeLocked()
	close(c.closing)
	c.pool.close()
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
	c.wantReader() // a parked reader role: the reading must end

	go func() {
		defer c.wg.Done()
		_ = c.t.Close(code, reason)
		c.stop()
	}()
	for id, p := range pending {
		c.hand(id, p, reply{err: c.cause})
	}
	if c.wk != nil {
		c.wk.close()
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

// readFailed closes the connection after the reader's Read failed with
// err. A read that fails without a close code (a reset, say) means the
// connection broke: CloseAbnormal. This side may have closed the
// connection already, after the transport closed it but before the read
// returned (the transport's read limit, a close frame from the other
// side): the code the read reports is then the one the connection ended
// with, since this side's close frame could not follow it.
func (c *Conn) readFailed(err error) {
	if _, over := errors.AsType[overLimit](err); over {
		c.limit(LimitMessage)
	}
	ce, ok := errors.AsType[*CloseError](err)
	if !ok {
		c.teardown(fmt.Errorf("%w: %w", &CloseError{Code: CloseAbnormal}, err), CloseNormal, "")
		return
	}
	c.teardown(err, CloseNormal, "")
	c.mu.Lock()
	defer c.mu.Unlock()
	if sent, ok := errors.AsType[*CloseError](c.cause); ok && *sent != *ce {
		c.cause = fmt.Errorf("%w: %w", ErrClosed, err)
	}
}

// outboxDrained is the outbox's drained hook, run by the goroutine that
// stopped writing: a draining connection may now be idle.
func (c *Conn) outboxDrained() {
	if !c.drainingFlag.Load() {
		return
	}
	c.mu.Lock()
	c.checkIdleLocked()
	c.mu.Unlock()
}

// Post queues a pre-encoded message (a hub event, say) without waiting.
// If MaxQueue posted messages are already waiting, the other side is not
// keeping up: the connection is closed with 1008 and Post returns
// ErrTooSlow itself, unwrapped, from that one call only, so a caller can
// count each slow peer once. Calls after the connection closed return its
// close cause (wrapping ErrClosed, and ErrTooSlow if that was the cause).
// Post must not be given a message it will modify later.
func (c *Conn) Post(msg []byte) error {
	err := c.out.postEvent(msg, nil)
	if err == ErrTooSlow { //nolint:errorlint // postEvent returns it bare
		c.tooSlow()
	}
	return err
}

// post queues a reply of the reader's own (an error, rpc.ping's result,
// an inline handler's), waiting for room: meanwhile, the reader reads
// nothing more from a peer that does not read what it is sent.
func (c *Conn) post(b []byte) { _ = c.out.add(b) } // fails only once closed

// writeFailed closes the connection after a write failed, or made no
// progress for WriteStall.
//
// A write most often fails because the transport closed under it: the
// reader has just read the other side's close frame (a hub going away,
// say), and the transport answered it and closed. The reader then reports
// that close, which is the true cause, the one pending calls should fail
// with; so a served connection gives its reader up to writeFailedWait to
// do so before blaming the write.
func (c *Conn) writeFailed(err error) {
	if errors.Is(err, ErrTooSlow) {
		c.limit(LimitWriteStall)
		c.o.Logger.Warn("peer too slow: writes stalled", zap.Duration("stall", c.o.WriteStall))
		c.teardown(err, ClosePolicy, "write stalled")
		return
	}
	c.mu.Lock()
	serving := c.serving
	c.mu.Unlock()
	if serving {
		t := time.NewTimer(writeFailedWait)
		select {
		case <-c.readDone:
		case <-t.C:
		}
		t.Stop()
	}
	c.teardown(err, CloseInternalError, "write failed")
}

// writeFailedWait bounds how long a failed write waits for the reader to
// report why the connection ended.
const writeFailedWait = time.Second

// tooSlow closes a peer that does not read what it is sent.
func (c *Conn) tooSlow() {
	c.o.Logger.Warn("peer too slow: outbound queue full")
	c.teardown(ErrTooSlow, ClosePolicy, "too slow")
}

// send queues b, waiting for room until ctx ends.
func (c *Conn) send(ctx context.Context, b []byte) error { return c.out.send(ctx, b, false) }

// reply sends the reply of a call or batch that ran on a handler
// goroutine, or on the reader: it may wait while the reader holds the
// queue (see outbox.holdWrites). It fails only once the connection closed.
func (c *Conn) reply(b []byte) { _ = c.out.send(c.life, b, true) }
