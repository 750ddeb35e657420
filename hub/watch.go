package hub

import (
	"context"
	"fmt"
	"slices"
)

// This file lets Go code beside the hub (the server's MCP endpoint) follow
// topics and ask the Policy without being a peer: a watch is in no
// presence list and receives no rpc.event.

// watch is one Watch: fn is told of each event on its topic.
type watch struct {
	fn func(seq uint64)
}

// Watch calls fn with the position of each event on topic (one without
// wildcards), published here or arriving from another node, until the
// returned stop is called. fn runs with the hub's publish lock held, in
// the order the events reach subscribers: it must return at once and
// must not call the hub. A watch is not a peer: presence does not show
// it and the Policy is not asked (the caller asks [Hub.Allow]).
func (h *Hub) Watch(topic string, fn func(seq uint64)) (stop func(), err error) {
	if !validTopic(topic, false, h.o.MaxTopicLength) {
		return nil, fmt.Errorf("%w: %q", ErrInvalidTopic, topic)
	}
	w := &watch{fn: fn}
	h.mu.Lock()
	if h.watches == nil {
		h.watches = make(map[string][]*watch)
	}
	h.watches[topic] = append(h.watches[topic], w)
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		ws := slices.DeleteFunc(h.watches[topic], func(x *watch) bool { return x == w })
		if len(ws) == 0 {
			delete(h.watches, topic)
		} else {
			h.watches[topic] = ws
		}
	}, nil
}

// watchedLocked tells the watches of topic about an event at seq. h.mu is
// held.
func (h *Hub) watchedLocked(topic string, seq uint64) {
	for _, w := range h.watches[topic] {
		w.fn(seq)
	}
}

// Allow asks the hub's Policy whether the caller behind ctx (see
// [Identity]) may do a on target, as the hub asks before serving a peer:
// nil, or a *peer.Error (-32001 for a refusal).
func (h *Hub) Allow(ctx context.Context, a Action, target string) error {
	return h.allow(ctx, a, target)
}
