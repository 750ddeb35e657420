package client

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/switchboard-rpc/switchboard/peer"
	"go.uber.org/zap"
)

// Position is a place in a hub's event stream: the epoch that names the
// stream and an event's sequence number in it. Sequence numbers grow in
// publish order over all topics. A new epoch (a hub that lost its
// history, by restarting say) makes positions of the old one meaningless.
type Position struct {
	Epoch string `json:"epoch"`
	Seq   uint64 `json:"seq"`
}

// IsZero reports whether p is the zero Position, which means "from now".
func (p Position) IsZero() bool { return p == Position{} }

func (p Position) String() string { return fmt.Sprintf("%s:%d", p.Epoch, p.Seq) }

// SubscribeOptions configures one subscription. A nil *SubscribeOptions
// is valid: from now, without presence.
type SubscribeOptions struct {
	// Since starts the subscription after a position, one that a
	// Subscription.Position or an Event gave before: the hub replays the
	// events after it that it still holds, then the subscription goes on
	// live. When the hub no longer holds all of them (or the position is
	// of another epoch), the handler gets an Event with Missed set first.
	// The zero Position starts from now.
	Since Position

	// OnPresence, if set, asks the hub for the presence changes of the
	// subscription's pattern and receives them: another peer began or
	// ceased to be subscribed to a pattern that overlaps it. It runs on
	// the subscription's goroutine, in order with the events. The hub's
	// policy may refuse presence (-32001).
	OnPresence func(PresenceChange)
}

// PresenceChange is a peer joining or leaving a subscription's pattern.
type PresenceChange struct {
	Join  bool     // false: the peer left
	Topic string   // the subscription's pattern
	Peer  PeerInfo // who
}

// PeerInfo is how the hub shows a peer: its id and, if authentication
// gave it a name, that name.
type PeerInfo struct {
	ID   string `json:"id"`
	User string `json:"user,omitempty"`
	Node string `json:"node,omitempty"` // in a cluster of hubs, the node it is connected to
}

// eventParams is rpc.event's params. Replay is set on events the hub
// replays for a subscription resuming from a position: the pattern they
// are replayed for.
type eventParams struct {
	Topic  string          `json:"topic"`
	Data   json.RawMessage `json:"data"`
	Seq    uint64          `json:"seq"`
	Epoch  string          `json:"epoch"`
	Replay string          `json:"replay"`
}

// subscribeParams is rpc.subscribe's params.
type subscribeParams struct {
	Topic    string    `json:"topic"`
	Since    *Position `json:"since,omitempty"`
	Presence bool      `json:"presence,omitempty"`
}

// subscribeResult is what rpc.subscribe answers. A hub that gives no
// positions leaves Epoch and Seq out.
type subscribeResult struct {
	Epoch     string `json:"epoch"`
	Seq       uint64 `json:"seq"`
	Recovered *bool  `json:"recovered"`
}

// How a subscription's events stay in order and free of duplicates,
// across its start and reconnections, with subscriptions to overlapping
// patterns sharing the connection:
//
// Until its rpc.subscribe result has been taken in (start), a
// subscription holds the events that match it, since it cannot yet tell
// those sent before the hub registered it from its own. The result gives
// head, the stream's position when the hub registered it: live events
// after head are its own, and, when resuming, the hub replays the events
// after Since up to head, marked with the pattern they are replayed for,
// before any live event after head. So a subscription takes a replayed
// event of its pattern, or a live one after head, when its position is
// after the subscription's last; it takes events without a position (a
// hub that gives none) as they come.

// start takes in the result of the subscription's rpc.subscribe, made
// with since (zero if none), and the events held meanwhile. It is called
// with c.smu held; on a subscription started already it does nothing.
func (s *Subscription) start(res subscribeResult, since Position, log *zap.Logger) {
	if s.known {
		return
	}
	s.known = true
	s.head = res.Seq
	switch {
	case since.IsZero():
		s.pos = Position{Epoch: res.Epoch, Seq: res.Seq}
	case res.Epoch != s.pos.Epoch:
		s.pos = Position{Epoch: res.Epoch}
		s.missed()
	case res.Recovered == nil || !*res.Recovered:
		s.missed()
	}
	held := s.held
	s.held = nil
	for _, ev := range held {
		s.offer(ev, log)
	}
}

// offer queues ev if it belongs to s and is new to it. It is called with
// c.smu held, on a started subscription.
func (s *Subscription) offer(ev eventParams, log *zap.Logger) {
	if ev.Seq != 0 {
		if ev.Replay != "" && ev.Replay != s.pattern || ev.Seq <= s.pos.Seq ||
			ev.Replay == "" && ev.Seq <= s.head {
			return
		}
		s.pos = Position{Epoch: ev.Epoch, Seq: ev.Seq}
	}
	s.push(item{ev: Event{Topic: ev.Topic, Data: ev.Data, Seq: ev.Seq, Epoch: ev.Epoch}}, log)
}

// hold keeps ev until the subscription starts, within EventBuffer.
func (s *Subscription) hold(ev eventParams) {
	if len(s.held) >= s.max {
		s.mu.Lock()
		s.dropped++
		s.gap = true
		s.mu.Unlock()
		return
	}
	s.held = append(s.held, ev)
}

// missed makes a Missed event go before the next event.
func (s *Subscription) missed() {
	s.mu.Lock()
	s.gap = true
	s.mu.Unlock()
}

// Position returns the position of the last event the subscription took
// (queued for its handler), or, before any, of its start: where it would
// resume. Save it to resume a subscription in another run of the program
// (SubscribeOptions.Since). It is the zero Position until the hub has
// answered, and always with a hub that gives no positions.
func (s *Subscription) Position() Position {
	s.c.smu.Lock()
	defer s.c.smu.Unlock()
	return s.pos
}

// onPresence serves rpc.join and rpc.leave on the reader goroutine: it
// queues the change to the subscriptions of its topic that asked.
func (c *Client) onPresence(_ context.Context, req *peer.Request) (any, error) {
	var p struct {
		Topic string   `json:"topic"`
		Peer  PeerInfo `json:"peer"`
	}
	if err := json.Unmarshal(req.Params, &p); err != nil || p.Topic == "" {
		c.log.Debug("malformed presence change dropped", zap.String("method", req.Method), zap.ByteString("params", req.Params))
		return nil, peer.Errorf(peer.CodeInvalidParams, "%s needs a topic", req.Method)
	}
	pc := &PresenceChange{Join: req.Method == "rpc.join", Topic: p.Topic, Peer: p.Peer}
	c.smu.Lock()
	defer c.smu.Unlock()
	for s := range c.subs {
		if s.onPresence != nil && s.pattern == p.Topic {
			s.push(item{pc: pc}, c.log)
		}
	}
	return nil, nil
}

// resubscribeParams returns, for each pattern of subs, the params that
// subscribe to it again on a new connection: since the earliest position
// of its subscriptions, with presence if one asked. It marks the
// subscriptions not started. It is called with c.smu held.
func resubscribeParams(subs map[*Subscription]struct{}) []subscribeParams {
	var params []subscribeParams
	index := make(map[string]int)
	for s := range subs {
		s.known, s.held = false, nil
		i, ok := index[s.pattern]
		if !ok {
			i = len(params)
			index[s.pattern] = i
			params = append(params, subscribeParams{Topic: s.pattern})
		}
		p := &params[i]
		p.Presence = p.Presence || s.onPresence != nil
		switch {
		case s.pos.Epoch == "": // not started yet: nothing to resume
		case p.Since == nil:
			p.Since = &Position{Epoch: s.pos.Epoch, Seq: s.pos.Seq}
		case s.pos.Epoch == p.Since.Epoch && s.pos.Seq < p.Since.Seq:
			p.Since.Seq = s.pos.Seq
		}
	}
	return params
}

// History is the answer to [Client.History].
type History struct {
	Epoch  string  `json:"epoch"`  // the hub's stream
	Seq    uint64  `json:"seq"`    // its latest position
	Events []Event `json:"events"` // oldest first; their Epoch is set
	// Truncated reports that the events asked for did not fit in one
	// message: Events holds the newest that did.
	Truncated bool `json:"truncated"`
}

// History returns the recent events of a topic or pattern that the hub
// holds, at most limit (the newest; 0 asks for the hub's default), and
// only those after since unless it is zero. The hub's policy decides who
// may read a pattern's history as it does who may subscribe to it.
func (c *Client) History(ctx context.Context, pattern string, limit int, since Position) (History, error) {
	params := map[string]any{"topic": pattern}
	if limit > 0 {
		params["limit"] = limit
	}
	if !since.IsZero() {
		params["since"] = since
	}
	var h History
	if err := c.Call(ctx, "rpc.history", params, &h); err != nil {
		return History{}, err
	}
	for i := range h.Events {
		h.Events[i].Epoch = h.Epoch
	}
	return h, nil
}

// Presence returns the peers that an event published on topic would
// reach, as the hub shows them. The hub's policy may refuse (-32001).
func (c *Client) Presence(ctx context.Context, topic string) ([]PeerInfo, error) {
	var res struct {
		Peers []PeerInfo `json:"peers"`
	}
	if err := c.Call(ctx, "rpc.presence", map[string]string{"topic": topic}, &res); err != nil {
		return nil, err
	}
	return res.Peers, nil
}
