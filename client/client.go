package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/switchboard-rpc/switchboard/peer"
	"go.uber.org/zap"
)

var (
	// ErrClosed is returned (possibly wrapping a cause) by the methods of
	// a client that is closed: by Close, or by itself after giving up
	// reconnecting (see Options.MaxAttempts).
	ErrClosed = errors.New("client: closed")

	// ErrConnectionLost is wrapped, together with the connection's own
	// error, by calls that were in flight when the connection dropped.
	// Such a call may or may not have run on the other side.
	ErrConnectionLost = errors.New("client: connection lost")

	// ErrDisconnected is wrapped by calls made while the client is
	// reconnecting, when they are not to wait (Options.FailFast,
	// WithFailFast). Such a call was not sent.
	ErrDisconnected = errors.New("client: not connected")
)

// Client is a WebSocket connection to a hub that stays up: it calls the
// hub's methods, serves the methods the hub calls back (Options.Router),
// and delivers the events of its subscriptions. When the connection drops,
// the client dials again with exponential backoff, re-subscribes its
// topics and carries on; Options.OnState observes this.
//
// All methods are safe for concurrent use. Close must be called to release
// the client's goroutines.
type Client struct {
	urls   []string // url of Dial first, then Options.URLs
	o      Options
	hc     *http.Client
	ownHC  bool
	log    *zap.Logger
	router router

	ctx  context.Context // the client's lifetime; cancelled by Close
	stop context.CancelFunc
	done chan struct{} // closed when the client is closed
	wg   sync.WaitGroup

	mu     sync.Mutex
	pc     *peer.Conn    // nil while disconnected
	cur    int           // index in urls of pc, or of the last connection
	ready  chan struct{} // closed when pc is set or the client closes
	state  State
	closed bool
	err    error     // why the client closed
	exp    time.Time // when the token of the last connection made expires (TokenFunc)

	changes []stateChange // not yet reported to OnState
	changed chan struct{} // 1-buffered: changes has news

	smu   sync.Mutex
	subs  map[*Subscription]struct{}
	hubMu sync.Mutex // held across rpc.subscribe and rpc.unsubscribe calls

	prov provisions // the methods it provides (provide.go)
}

// Dial connects to the hub at url (ws:// or wss://, usually ending in
// /rpc) and returns a connected Client. With Options.URLs, the nodes of a
// cluster, it tries url and then each of those in turn until one answers.
// ctx bounds the first connection only: if no URL answers, Dial returns
// their errors and does not retry. Later losses of the connection are
// repaired in the background.
func Dial(ctx context.Context, url string, opts *Options) (*Client, error) {
	c := &Client{
		o:       opts.withDefaults(),
		ready:   make(chan struct{}),
		done:    make(chan struct{}),
		subs:    make(map[*Subscription]struct{}),
		changed: make(chan struct{}, 1),
	}
	c.urls = urlList(url, c.o.URLs)
	c.log = c.o.Logger
	c.hc, c.ownHC = httpClient(c.o.HTTPClient, c.o.TLSConfig)
	if c.ownHC {
		gatherDials(c.hc.Transport.(*http.Transport))
	}
	c.router = router{
		user:     c.o.Router,
		events:   peer.HandlerFunc(c.onEvent),
		presence: peer.HandlerFunc(c.onPresence),
		revoked:  peer.HandlerFunc(c.onRevoked),
		missed:   peer.HandlerFunc(c.onMissed),
		prov:     &c.prov,
	}
	c.ctx, c.stop = context.WithCancel(context.Background())
	if c.o.OnState != nil {
		c.wg.Go(c.notify)
	}

	c.setState(StateConnecting, nil)
	var errs []error
	for i, u := range c.urls {
		cn, err := c.connect(ctx, u)
		if err == nil {
			c.mu.Lock()
			c.pc, c.cur = cn, i
			close(c.ready)
			c.mu.Unlock()
			c.setState(StateConnected, nil)
			c.wg.Go(func() { c.run(cn) })
			return c, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	err := errors.Join(errs...)
	c.stop()
	c.setState(StateClosed, err)
	c.wg.Wait()
	if c.ownHC {
		c.hc.CloseIdleConnections()
	}
	return nil, err
}

// urlList returns url followed by the others, each once.
func urlList(url string, others []string) []string {
	urls := []string{url}
	for _, u := range others {
		if !slices.Contains(urls, u) {
			urls = append(urls, u)
		}
	}
	return urls
}

// URL returns the URL of the hub the client is connected to or, while it
// reconnects, was last connected to: url of Dial or one of Options.URLs.
func (c *Client) URL() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.urls[c.cur]
}

// connect dials url, starts serving, re-subscribes the client's topics
// and provides its methods again.
func (c *Client) connect(ctx context.Context, url string) (*peer.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, c.o.DialTimeout)
	defer cancel()
	dialed := new(dialedConn)
	header, exp, err := c.dialHeader(ctx)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", url, err)
	}
	ws, resp, err := websocket.Dial(context.WithValue(ctx, dialedKey{}, dialed), url, &websocket.DialOptions{
		HTTPClient: c.hc,
		HTTPHeader: header,
	})
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			// Refused by the server: say how (a 401 carries -32001).
			// The WebSocket library keeps at most the body's first 1 KiB;
			// bound it here too rather than rely on that.
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
			err = statusError(resp, body)
		}
		return nil, fmt.Errorf("dial %s: %w", url, err)
	}
	ws.SetReadLimit(int64(c.o.Conn.MaxMessage))
	po := c.o.Conn
	po.Router = c.router
	// A call made on a live connection is bounded by the connection (one
	// timer for all calls); one that waits for a connection gets a
	// deadline from withTimeout first, around that wait too.
	po.CallTimeout = c.o.CallTimeout
	po.Logger = c.log.With(zap.String("url", url))
	pc := peer.NewConn(dialed.transport(ws), &po)
	c.wg.Go(func() { _ = pc.Serve(c.ctx) }) // its error is pc.Err, read by run
	if err := c.resubscribe(ctx, pc); err != nil {
		_ = pc.Close()
		return nil, fmt.Errorf("%s: %w", url, err)
	}
	if err := c.reprovide(ctx, pc); err != nil {
		_ = pc.Close()
		return nil, fmt.Errorf("%s: %w", url, err)
	}
	c.mu.Lock()
	c.exp = exp
	c.mu.Unlock()
	return pc, nil
}

// run repairs the connection whenever it drops, until the client closes.
// It watches Closing rather than Done, so that a handler slow to return
// does not hold up the reconnection.
func (c *Client) run(pc *peer.Conn) {
	var tick <-chan time.Time
	if c.o.PingInterval > 0 {
		t := time.NewTicker(c.o.PingInterval)
		defer t.Stop()
		tick = t.C
	}
	var pingErr error
	var tt tokenTimer // the token's refresh, with Options.TokenFunc
	defer tt.stop()
	tt.arm(c.tokenExp())
	for {
		select {
		case <-pc.Closing():
		case <-c.ctx.Done():
			return
		case <-tick:
			if err := c.ping(pc); err != nil {
				pingErr = err
			}
			continue
		case <-tt.C():
			c.refresh(pc, &tt)
			continue
		}
		cause := pc.Err()
		if pingErr != nil {
			cause, pingErr = pingErr, nil
		}
		if !c.markDown(pc, cause) {
			return
		}
		c.log.Info("connection lost", zap.String("url", c.URL()), zap.Error(cause))
		next, err := c.reconnect(cause)
		if err != nil {
			c.shutdown(err)
			return
		}
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			_ = next.Close()
			return
		}
		c.pc = next
		close(c.ready)
		url := c.urls[c.cur]
		c.mu.Unlock()
		c.log.Info("reconnected", zap.String("url", url))
		c.setState(StateConnected, nil)
		pc = next
		tt.arm(c.tokenExp())
	}
}

// ping checks that the hub still answers on pc, and closes pc when it
// does not answer within PingTimeout: a connection can die without
// either end being told (a laptop put to sleep, a NAT that forgot it).
// It calls rpc.ping rather than sending a WebSocket ping, which the
// hub's WebSocket library would answer even if the hub served nothing.
func (c *Client) ping(pc *peer.Conn) error {
	ctx, cancel := context.WithTimeout(c.ctx, c.o.PingTimeout)
	defer cancel()
	err := pc.Call(ctx, "rpc.ping", nil, nil)
	if !errors.Is(err, context.DeadlineExceeded) || c.ctx.Err() != nil {
		return nil
	}
	_ = pc.CloseWith(peer.CloseGoingAway, "ping timeout")
	return fmt.Errorf("%w: no answer to rpc.ping within %v", ErrConnectionLost, c.o.PingTimeout)
}

// markDown records that pc is gone, once, and reports whether the client
// is still open.
func (c *Client) markDown(pc *peer.Conn, cause error) bool {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return false
	}
	if c.pc != pc {
		c.mu.Unlock()
		return true
	}
	c.pc = nil
	c.ready = make(chan struct{})
	c.mu.Unlock()
	c.setState(StateDisconnected, cause)
	return true
}

// reconnect dials until it succeeds, the client closes, or it has tried
// Options.MaxAttempts times. Each attempt goes to the URL after the one
// before: a node that died is not the first one tried again, and with one
// URL every attempt goes to it.
func (c *Client) reconnect(cause error) (*peer.Conn, error) {
	if c.o.MaxAttempts < 0 {
		return nil, cause
	}
	c.mu.Lock()
	cur := c.cur
	c.mu.Unlock()
	delay, wait := c.o.MinBackoff, time.Duration(0)
	for attempt := 1; ; attempt++ {
		if c.o.MaxAttempts > 0 && attempt > c.o.MaxAttempts {
			return nil, fmt.Errorf("gave up after %d attempts: %w", c.o.MaxAttempts, cause)
		}
		wait = max(wait, delay/2+rand.N(delay/2+1))
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-c.ctx.Done():
			t.Stop()
			return nil, ErrClosed
		}
		c.setState(StateConnecting, nil)
		i := (cur + attempt) % len(c.urls)
		pc, err := c.connect(c.ctx, c.urls[i])
		if err == nil {
			c.mu.Lock()
			c.cur = i
			c.mu.Unlock()
			return pc, nil
		}
		if c.ctx.Err() != nil {
			return nil, ErrClosed
		}
		cause = err
		c.log.Debug("reconnection failed", zap.Int("attempt", attempt), zap.Error(err))
		c.setState(StateDisconnected, err)
		delay = min(2*delay, c.o.MaxBackoff)
		// A server that refused with a Retry-After (a hub at its
		// connection limit says 1 s) is not asked again sooner; the
		// peers it turned away come back spread over half as long again.
		wait = 0
		var se *StatusError
		if errors.As(err, &se) && se.RetryAfter > 0 {
			wait = se.RetryAfter + rand.N(se.RetryAfter/2+1)
		}
	}
}

// Done returns a channel closed once the client is closed, by Close or
// because it gave up reconnecting; Err then says why.
func (c *Client) Done() <-chan struct{} { return c.done }

// Err returns nil while the client is open, and then why it closed: an
// error wrapping ErrClosed, and the last connection error when the client
// gave up reconnecting.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close closes the connection (code 1000), stops reconnecting, ends the
// subscriptions and waits for the client's goroutines, including event
// handlers that are running and the report of StateClosed to OnState:
// Close must not be called from an event handler or from OnState. Calls
// in flight fail with ErrClosed.
func (c *Client) Close() error {
	c.shutdown(nil)
	c.wg.Wait()
	return nil
}

// shutdown closes the client for cause (nil for Close).
func (c *Client) shutdown(cause error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.err = ErrClosed
	if cause != nil {
		c.err = fmt.Errorf("%w: %w", ErrClosed, cause)
	}
	pc := c.pc
	c.pc = nil
	select {
	case <-c.ready:
	default:
		close(c.ready) // wake the callers waiting for a connection
	}
	c.mu.Unlock()

	if pc != nil {
		_ = pc.Close()
	}
	c.stop()
	c.smu.Lock()
	for s := range c.subs {
		s.end(c.Err())
	}
	clear(c.subs)
	c.smu.Unlock()
	if cause != nil {
		c.log.Warn("client closed", zap.Error(cause))
	}
	c.setState(StateClosed, cause)
	c.wg.Go(func() {
		if c.ownHC {
			c.hc.CloseIdleConnections()
		}
		close(c.done)
	})
}

// router serves rpc.event itself, every other method with the user's
// Router, and then with the client's provisions. rpc.event is Inline: it runs on the reader goroutine, in arrival
// order, and only queues the event, so a burst of events needs neither
// goroutines nor in-flight slots, and none is dropped for want of one.
type router struct {
	user     peer.Router
	events   peer.Handler
	presence peer.Handler // rpc.join and rpc.leave, the same way
	revoked  peer.Handler // rpc.revoked, on a goroutine: it calls OnRevoked
	missed   peer.Handler // rpc.missed, inline: it starts the resumption on a goroutine
	prov     *provisions
}

func (r router) Lookup(method string) (peer.Handler, peer.Mode) {
	switch method {
	case "rpc.event":
		return r.events, peer.Inline
	case "rpc.join", "rpc.leave":
		return r.presence, peer.Inline
	case "rpc.revoked":
		return r.revoked, peer.Concurrent
	case "rpc.missed":
		return r.missed, peer.Inline
	}
	var h peer.Handler
	mode := peer.Concurrent
	if r.user != nil {
		h, mode = r.user.Lookup(method)
	}
	return r.prov.lookup(method, h, mode)
}
