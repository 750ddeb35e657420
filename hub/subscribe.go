package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/switchboard-rpc/switchboard/peer"
)

// This file serves rpc.subscribe and rpc.unsubscribe, and keeps the
// subscriptions of the peers here.

// subscribeRequest is the params of rpc.subscribe.
type subscribeRequest struct {
	topics   []string
	since    *Position
	presence bool
	gen      uint64 // p.auth.gen when the Policy was asked
}

// subscribeResult is the result of rpc.subscribe.
type subscribeResult struct {
	Topics    []string `json:"topics"`
	Epoch     string   `json:"epoch"`
	Seq       uint64   `json:"seq"`
	Recovered *bool    `json:"recovered,omitempty"`
}

func (h *Hub) serveSubscribe(ctx context.Context, req *peer.Request) (any, error) {
	p, err := h.caller(ctx, req.Method)
	if err != nil {
		return nil, err
	}
	sr, err := h.subscribeParams(req.Params)
	if err != nil {
		return nil, err
	}
	for {
		sr.gen = p.auth.gen.Load()
		for _, t := range sr.topics {
			if err := h.allow(ctx, Subscribe, t); err != nil {
				return nil, err
			}
			if sr.presence {
				if err := h.allow(ctx, Presence, t); err != nil {
					return nil, err
				}
			}
		}
		res, err := h.subscribeFrom(p, &sr)
		if e, ok := errors.AsType[*peer.Error](err); ok && e.Code == peer.CodeOverloaded {
			h.refused(ctx, Refusal{Action: Subscribe, Target: strings.Join(sr.topics, ","), Err: err, Limit: "subscriptions"})
		}
		if err != errReauthorized {
			return res, err
		}
	}
}

// errReauthorized is what adding a subscription or a provided method
// returns when the peer was reauthorized after the Policy was asked: it
// is to be asked again (see reauth.gen).
var errReauthorized = errors.New("hub: reauthorized meanwhile")

// subscribeFrom subscribes p to the patterns of sr and, with sr.since,
// starts their replays. It returns errReauthorized, and subscribes
// nothing, when p was reauthorized since sr.gen was read.
func (h *Hub) subscribeFrom(p *Peer, sr *subscribeRequest) (subscribeResult, error) {
	epoch := h.ep.Load().name
	res := subscribeResult{Topics: sr.topics, Epoch: epoch}
	// Whether everything after since is held is asked before the
	// subscription starts: an event dropped in between is then noticed
	// by the replay, which closes the connection rather than skip it.
	var after uint64
	complete := false
	if sr.since != nil && sr.since.Epoch == epoch {
		after = sr.since.Seq
		if h.seqr != nil {
			// A position another node gave may be ahead of what this
			// one has read of the stream: wait until it is not.
			h.waitDelivered(context.Background(), epoch, after)
		}
		complete = true
		for _, t := range sr.topics {
			page, err := h.store.Read(Query{Pattern: t, After: after})
			if err != nil {
				return res, fmt.Errorf("hub: read history of %s: %w", t, err)
			}
			if !page.Complete || after > page.Last {
				complete = false
			}
		}
	}

	h.mu.Lock()
	if p.auth.gen.Load() != sr.gen {
		h.mu.Unlock()
		return res, errReauthorized
	}
	if err := h.subscribeLocked(p, sr.topics, sr.presence); err != nil {
		h.mu.Unlock()
		return res, err
	}
	res.Seq = h.last
	if e := h.ep.Load().name; e != epoch { // restarted meanwhile
		res.Epoch = e
		after, complete = 0, false
	}
	if sr.since != nil {
		if after > h.last { // not a position of this stream
			after, complete = 0, false
		}
		if after < h.gap { // events from other nodes may be missing
			complete = false
		}
		for _, t := range sr.topics {
			p.rs.jobs = append(p.rs.jobs, replayJob{pattern: t, after: after, head: h.last, promised: complete})
		}
		h.startReplay(p)
	}
	h.mu.Unlock()

	if sr.since != nil {
		res.Recovered = &complete
		if complete {
			h.streams.recovered.Add(1)
		} else {
			h.streams.unrecovered.Add(1)
		}
	}
	return res, nil
}

// topicsResult is the result of rpc.subscribe and rpc.unsubscribe.
type topicsResult struct {
	Topics []string `json:"topics"`
}

func (h *Hub) serveUnsubscribe(ctx context.Context, req *peer.Request) (any, error) {
	p, patterns, err := h.topicRequest(ctx, req)
	if err != nil {
		return nil, err
	}
	return topicsResult{h.unsubscribe(p, patterns)}, nil
}

// topicRequest returns the peer making an rpc.subscribe or
// rpc.unsubscribe request and the patterns it names.
func (h *Hub) topicRequest(ctx context.Context, req *peer.Request) (*Peer, []string, error) {
	p, err := h.caller(ctx, req.Method)
	if err != nil {
		return nil, nil, err
	}
	patterns, err := h.topicParams(req.Params)
	if err != nil {
		return nil, nil, err
	}
	return p, patterns, nil
}

// subscribe adds p's subscriptions to the patterns, which must be valid.
// It returns the patterns, or an error when they would exceed the limit.
func (h *Hub) subscribe(p *Peer, patterns []string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.subscribeLocked(p, patterns, false); err != nil {
		return err
	}
	if p.auth.own == nil {
		p.auth.own = make(map[string]struct{})
	}
	for _, t := range patterns {
		p.auth.own[t] = struct{}{}
	}
	return nil
}

// subscribeLocked is subscribe with h.mu held; watch asks for presence
// changes on the patterns.
func (h *Hub) subscribeLocked(p *Peer, patterns []string, watch bool) error {
	if p.left {
		return fmt.Errorf("hub: peer %s left: %w", p.id, peer.ErrClosed)
	}
	added := 0
	for _, t := range patterns {
		if _, ok := p.subs[t]; !ok {
			added++
		}
	}
	if len(p.subs)+added > h.o.MaxSubscriptions {
		h.stats.overSubs.Add(1)
		return peer.Errorf(peer.CodeOverloaded, "Overloaded: more than %d subscriptions", h.o.MaxSubscriptions)
	}
	for _, t := range patterns {
		if _, ok := p.subs[t]; !ok {
			if p.subs == nil {
				p.subs = make(map[string]*subscription)
			}
			p.subs[t] = h.root.insert(p, t)
			h.nsubs++
			h.presenceChanged(p, "rpc.join", t)
		}
		if watch {
			h.watchLocked(p, t)
		}
	}
	return nil
}

// unsubscribe removes p's subscriptions to the patterns and returns those
// it had.
func (h *Hub) unsubscribe(p *Peer, patterns []string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	removed := []string{}
	for _, t := range patterns {
		if s, ok := p.subs[t]; ok {
			s.remove()
			h.unwatchLocked(p, t)
			h.nsubs--
			delete(p.subs, t)
			delete(p.auth.own, t)
			removed = append(removed, t)
		}
	}
	h.presenceChanged(p, "rpc.leave", removed...)
	return removed
}

// subscribeParams reads the params of rpc.subscribe: those of
// topicParams, and by name "since" and "presence".
func (h *Hub) subscribeParams(params json.RawMessage) (subscribeRequest, error) {
	topics, err := h.topicParams(params)
	if err != nil {
		return subscribeRequest{}, err
	}
	var p struct {
		Since    *json.RawMessage `json:"since"`
		Presence *bool            `json:"presence"`
	}
	if _, err := readParams(params, &p, nil); err != nil {
		return subscribeRequest{}, invalidParams(`"presence" takes true or false`)
	}
	sr := subscribeRequest{topics: topics, presence: p.Presence != nil && *p.Presence}
	if p.Since != nil && string(*p.Since) != "null" {
		since, err := positionParam(*p.Since)
		if err != nil {
			return subscribeRequest{}, err
		}
		sr.since = &since
	}
	return sr, nil
}

// positionParam reads {"epoch": string, "seq": integer >= 0}.
func positionParam(raw json.RawMessage) (Position, error) {
	var p struct {
		Epoch *string      `json:"epoch"`
		Seq   *json.Number `json:"seq"`
	}
	const usage = `"since" takes {"epoch": string, "seq": integer}`
	if form, err := readParams(raw, &p, nil); form != paramsByName || err != nil || p.Epoch == nil || p.Seq == nil {
		return Position{}, invalidParams(usage)
	}
	seq, err := strconv.ParseUint(p.Seq.String(), 10, 64)
	if err != nil {
		return Position{}, invalidParams(usage)
	}
	return Position{Epoch: *p.Epoch, Seq: seq}, nil
}

// topicParams reads the patterns of rpc.subscribe and rpc.unsubscribe:
// {"topic": t}, {"topics": [t, ...]} or [t, ...].
func (h *Hub) topicParams(params json.RawMessage) ([]string, error) {
	const usage = `takes {"topic": pattern} or [pattern, ...]`
	var topics []string
	var p struct {
		Topic  *string  `json:"topic"`
		Topics []string `json:"topics"`
	}
	form, err := readParams(params, &p, &topics)
	if err != nil {
		return nil, invalidParams(usage)
	}
	if form == paramsByName {
		if p.Topic != nil {
			topics = append(topics, *p.Topic)
		}
		topics = append(topics, p.Topics...)
	}
	if len(topics) == 0 {
		return nil, invalidParams("no topic: " + usage)
	}
	out := topics[:0]
	seen := make(map[string]bool, len(topics))
	for _, t := range topics {
		if err := h.checkTopic(t, true); err != nil {
			return nil, err
		}
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out, nil
}
