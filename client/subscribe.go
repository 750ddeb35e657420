package client

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/switchboard-rpc/switchboard/internal/wildcard"
	"github.com/switchboard-rpc/switchboard/peer"
	"go.uber.org/zap"
)

// Event is one message published on a topic, as delivered by the hub in
// an rpc.event notification. Subscriptions that match the same event share
// its Data: handlers must not modify it.
//
// An Event with Missed set carries nothing else: it tells the handler that
// events of the subscription were lost just before the ones that follow.
// It comes when resuming found the hub no longer holding all that was
// published since the subscription's position (or holding another epoch,
// after a restart), and when the handler fell EventBuffer events behind.
// A handler that keeps state built from the events should rebuild it.
type Event struct {
	Topic  string          `json:"topic"`            // the topic it was published on
	Data   json.RawMessage `json:"data"`             // the published value, as JSON
	Seq    uint64          `json:"seq,omitempty"`    // its position in the hub's stream (0 if the hub gives none)
	Epoch  string          `json:"epoch,omitempty"`  // the stream's epoch
	Missed bool            `json:"missed,omitempty"` // events were lost here; see above
}

// Position returns the event's position in the hub's stream.
func (ev Event) Position() Position { return Position{Epoch: ev.Epoch, Seq: ev.Seq} }

// Subscription delivers the events of one topic pattern to its handler,
// one at a time and in the order the hub sent them, on a goroutine of its
// own: a slow handler delays only its own subscription. It lasts across
// reconnections until Unsubscribe, Close, or the client's Close.
type Subscription struct {
	c          *Client
	pattern    string
	fn         func(Event)
	onPresence func(PresenceChange)
	max        int

	wake chan struct{} // 1-buffered: events are waiting
	quit chan struct{} // closed by end

	// Guarded by c.smu; see start.
	known bool          // the hub's answer is in: head is set
	head  uint64        // the stream's position when the hub subscribed it
	pos   Position      // of the last event taken, or of the start
	held  []eventParams // events that came before the answer

	mu       sync.Mutex
	queue    []item
	ended    bool
	err      error // why it ended, for Err
	gap      bool  // events were lost: a Missed event goes before the next
	dropping bool  // events are being dropped; logged once per episode
	dropped  int64
}

// item is what a subscription's goroutine hands to the application: an
// event, or a presence change.
type item struct {
	ev Event
	pc *PresenceChange
}

type topicParams struct {
	Topic string `json:"topic"`
}

// Subscribe subscribes to the topics matching pattern ("news", "news.*",
// "news.>"; see the protocol for the syntax) and calls fn with each
// event, in order, on a goroutine of the subscription's own. It returns
// once the hub has accepted the subscription; a refusal is a *peer.Error
// (-32001 when the hub's policy denies it). If ctx ends first, the
// subscription is taken back (rpc.unsubscribe), in case the hub applied it
// after Subscribe stopped waiting.
//
// Two subscriptions whose patterns both match a topic each get its events.
// After a reconnection the client subscribes again by itself, from the
// position of the last event the subscription took: the hub replays what
// was published meanwhile, so the handler sees every event once and in
// order, or, if the hub no longer holds some of them, an Event with
// Missed set before those it still has.
func (c *Client) Subscribe(ctx context.Context, pattern string, fn func(Event)) (*Subscription, error) {
	return c.SubscribeWith(ctx, pattern, nil, fn)
}

// SubscribeWith is Subscribe with options: resuming from a position, and
// presence changes.
func (c *Client) SubscribeWith(ctx context.Context, pattern string, opts *SubscribeOptions, fn func(Event)) (*Subscription, error) {
	var o SubscribeOptions
	if opts != nil {
		o = *opts
	}
	s := &Subscription{
		c:          c,
		pattern:    pattern,
		fn:         fn,
		onPresence: o.OnPresence,
		max:        c.o.EventBuffer,
		wake:       make(chan struct{}, 1),
		quit:       make(chan struct{}),
		pos:        o.Since,
	}
	params := subscribeParams{Topic: pattern, Presence: o.OnPresence != nil}
	if !o.Since.IsZero() {
		params.Since = &o.Since
	}
	// hubMu orders this rpc.subscribe with the rpc.unsubscribe of another
	// subscription to the same pattern.
	c.hubMu.Lock()
	defer c.hubMu.Unlock()
	c.smu.Lock()
	c.mu.Lock()
	closed, err := c.closed, c.err
	c.mu.Unlock()
	if closed {
		c.smu.Unlock()
		return nil, err
	}
	c.subs[s] = struct{}{}
	c.wg.Go(s.loop)
	c.smu.Unlock()

	var res subscribeResult
	if err := c.Call(ctx, "rpc.subscribe", params, &res); err != nil {
		c.remove(s)
		if ctx.Err() != nil && !c.subscribed(pattern) {
			// The request may have reached the hub and been applied after
			// we stopped waiting: take it back, so the hub does not keep
			// sending events nobody asked for. The hub runs both methods
			// in the order they arrive, and hubMu keeps other
			// subscriptions to this pattern out until it is sent.
			nctx, cancel := context.WithTimeout(c.ctx, c.o.DialTimeout)
			_ = c.Notify(WithFailFast(nctx, true), "rpc.unsubscribe", topicParams{Topic: pattern})
			cancel()
		}
		return nil, err
	}
	c.smu.Lock()
	s.start(res, o.Since, c.log)
	c.smu.Unlock()
	return s, nil
}

// Topic returns the pattern the subscription was made with.
func (s *Subscription) Topic() string { return s.pattern }

// Dropped returns how many events were dropped because the handler was
// EventBuffer events behind (each such run is marked by a Missed event).
func (s *Subscription) Dropped() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

// Unsubscribe stops the deliveries at once and, unless another of the
// client's subscriptions uses the same pattern, tells the hub
// (rpc.unsubscribe) and waits for its answer. While the client is
// disconnected there is nothing to tell: the pattern is simply not
// subscribed again. A handler that is running is not waited for, so
// Unsubscribe may be called from the subscription's own handler.
func (s *Subscription) Unsubscribe(ctx context.Context) error {
	c := s.c
	if !c.remove(s) {
		return nil
	}
	c.hubMu.Lock()
	defer c.hubMu.Unlock()
	if c.subscribed(s.pattern) { // subscribed again meanwhile
		return nil
	}
	err := c.Call(WithFailFast(ctx, true), "rpc.unsubscribe", topicParams{Topic: s.pattern}, nil)
	if errors.Is(err, ErrDisconnected) || errors.Is(err, ErrClosed) || errors.Is(err, ErrConnectionLost) {
		return nil // the hub forgets a connection's subscriptions with it
	}
	return err
}

// Close is Unsubscribe bounded by Options.DialTimeout, for defer.
func (s *Subscription) Close() error {
	ctx, cancel := context.WithTimeout(s.c.ctx, s.c.o.DialTimeout)
	defer cancel()
	return s.Unsubscribe(ctx)
}

// subscribed reports whether a subscription to pattern exists.
func (c *Client) subscribed(pattern string) bool {
	c.smu.Lock()
	defer c.smu.Unlock()
	for s := range c.subs {
		if s.pattern == pattern {
			return true
		}
	}
	return false
}

// remove ends s and reports whether the hub should be told: s was still
// subscribed and no other subscription shares its pattern.
func (c *Client) remove(s *Subscription) bool {
	c.smu.Lock()
	defer c.smu.Unlock()
	if _, ok := c.subs[s]; !ok {
		return false
	}
	delete(c.subs, s)
	s.end(nil)
	for o := range c.subs {
		if o.pattern == s.pattern {
			return false
		}
	}
	return true
}

// end stops s's goroutine, for the reason err (nil: Unsubscribe); the
// handler in progress, if any, finishes.
func (s *Subscription) end(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended {
		s.ended = true
		s.err = err
		s.queue = nil
		close(s.quit)
	}
}

// Done returns a channel that is closed when the subscription ends: by
// Unsubscribe or Close, the client's Close, or the hub revoking it. Err
// then says why.
func (s *Subscription) Done() <-chan struct{} { return s.quit }

// Err returns nil while the subscription lasts and after Unsubscribe;
// once the hub has revoked it (a refreshed token no longer allows the
// pattern; see Options.OnRevoked), an error wrapping ErrRevoked; once the
// client is closed, an error wrapping ErrClosed.
func (s *Subscription) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *Subscription) loop() {
	for {
		select {
		case <-s.quit:
			return
		case <-s.wake:
		}
		for {
			s.mu.Lock()
			if s.ended || len(s.queue) == 0 {
				s.mu.Unlock()
				break
			}
			it := s.queue[0]
			s.queue[0] = item{}
			s.queue = s.queue[1:]
			s.mu.Unlock()
			if it.pc != nil {
				s.onPresence(*it.pc)
			} else {
				s.fn(it.ev)
			}
		}
	}
}

// push queues it without waiting; a full queue drops it, and the next
// event queued is preceded by one marked Missed.
func (s *Subscription) push(it item, log *zap.Logger) {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	if len(s.queue) >= s.max {
		s.dropped++
		s.gap = it.pc == nil || s.gap
		first := !s.dropping
		s.dropping = true
		s.mu.Unlock()
		if first {
			log.Warn("subscription too slow: dropping events", zap.String("pattern", s.pattern))
		}
		return
	}
	s.dropping = false
	if s.gap && it.pc == nil {
		s.gap = false
		s.queue = append(s.queue, item{ev: Event{Epoch: it.ev.Epoch, Missed: true}})
	}
	s.queue = append(s.queue, it)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// onEvent serves rpc.event on the reader goroutine (see router). Events
// that arrive inside a batch are served by the batch's workers, and may
// be queued out of order; the hub sends each event on its own.
func (c *Client) onEvent(_ context.Context, req *peer.Request) (any, error) {
	return nil, c.deliver(req.Params)
}

// deliver queues an event to every subscription whose pattern matches it
// and to which it is new (see start).
func (c *Client) deliver(params json.RawMessage) error {
	var ev eventParams
	if err := json.Unmarshal(params, &ev); err != nil || ev.Topic == "" {
		c.log.Debug("malformed rpc.event dropped", zap.ByteString("params", params))
		return peer.Errorf(peer.CodeInvalidParams, "rpc.event needs a topic")
	}
	c.smu.Lock()
	defer c.smu.Unlock()
	for s := range c.subs {
		switch {
		case !wildcard.Match(s.pattern, ev.Topic):
		case !s.known:
			s.hold(ev)
		default:
			s.offer(ev, c.log)
		}
	}
	return nil
}

// resubscribe subscribes pc to the patterns of the client's subscriptions,
// after a reconnection, each from the position of the last event its
// subscriptions took. A pattern the hub refuses now is logged and its
// subscriptions stay (they receive nothing); only a transport error fails
// the connection attempt.
func (c *Client) resubscribe(ctx context.Context, pc *peer.Conn) error {
	c.smu.Lock()
	params := resubscribeParams(c.subs)
	c.smu.Unlock()
	if len(params) == 0 {
		return nil
	}
	elems := make([]peer.BatchElem, len(params))
	results := make([]subscribeResult, len(params))
	for i, p := range params {
		elems[i] = peer.BatchElem{Method: "rpc.subscribe", Params: p, Result: &results[i]}
	}
	if err := pc.Batch(ctx, elems); err != nil {
		return err
	}
	c.smu.Lock()
	defer c.smu.Unlock()
	for i, e := range elems {
		if e.Err != nil {
			if _, ok := e.Err.(*peer.Error); !ok {
				return e.Err
			}
			c.log.Warn("re-subscription refused", zap.String("topic", params[i].Topic), zap.Error(e.Err))
			continue // nothing will come; the next connection tries again
		}
		for s := range c.subs {
			if s.pattern == params[i].Topic {
				var since Position
				if params[i].Since != nil {
					since = s.pos
				}
				s.start(results[i], since, c.log)
			}
		}
	}
	return nil
}
