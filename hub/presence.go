package hub

import (
	"context"
	"fmt"
	"sort"

	"github.com/switchboard-rpc/switchboard/internal/jsonx"
	"github.com/switchboard-rpc/switchboard/peer"
)

// Presence: who would receive an event on a topic, and notifications to
// the subscriptions that asked ("presence": true) when that changes.
//
// A peer is present on a pattern P when one of its subscriptions overlaps
// P (some topic matches both). A subscription to P with presence gets
// rpc.join when another peer becomes present on P, and rpc.leave when it
// stops being so (it unsubscribed, or left), with "topic": P. So a peer
// that subscribes to "chat.room1" and then to "chat.>" joins a watcher of
// "chat.room1" once, and leaves it only when both are gone.

// PeerInfo is how presence shows a peer: its id and, when authentication
// gave it an identity that is a string or a fmt.Stringer, that as its
// user. Nothing else of the identity (a token, say) is shown.
type PeerInfo struct {
	ID   string `json:"id"`
	User string `json:"user,omitempty"`
	Node string `json:"node,omitempty"` // the node it is connected to, in a cluster
}

// Info returns how presence shows p.
func (p *Peer) Info() PeerInfo {
	return PeerInfo{ID: p.id, User: userOf(p.identity), Node: p.h.node()}
}

// userOf returns the user an identity shows as: itself when it is a
// string, its String() when it is a fmt.Stringer, else "".
func userOf(identity any) string {
	switch u := identity.(type) {
	case string:
		return u
	case fmt.Stringer:
		return u.String()
	}
	return ""
}

// Presence returns the peers that an event published on topic would
// reach, sorted by id. It returns an error wrapping ErrInvalidTopic for
// a bad topic or one with wildcards.
func (h *Hub) Presence(topic string) ([]*Peer, error) {
	if !validTopic(topic, false, h.o.MaxTopicLength) {
		return nil, fmt.Errorf("%w: %q", ErrInvalidTopic, topic)
	}
	h.mu.Lock()
	nodes := h.root.match(nil, topic)
	seen := make(map[*Peer]bool)
	var peers []*Peer
	for _, n := range nodes {
		for _, s := range n.subs {
			if !seen[s.p] {
				seen[s.p] = true
				peers = append(peers, s.p)
			}
		}
	}
	h.mu.Unlock()
	sort.Slice(peers, func(i, j int) bool { return peers[i].id < peers[j].id })
	return peers, nil
}

// presenceResult is the result of rpc.presence.
type presenceResult struct {
	Peers []PeerInfo `json:"peers"`
}

// servePresence answers rpc.presence: {"topic": topic} or [topic].
func (h *Hub) servePresence(ctx context.Context, req *peer.Request) (any, error) {
	const usage = `rpc.presence takes {"topic": topic} or [topic]`
	var p struct {
		Topic *string `json:"topic"`
	}
	var a []string
	switch form, err := readParams(req.Params, &p, &a); {
	case err != nil, form == paramsByPosition && len(a) != 1:
		return nil, invalidParams(usage)
	case form == paramsByPosition:
		p.Topic = &a[0]
	}
	if p.Topic == nil {
		return nil, invalidParams(usage)
	}
	if err := h.checkTopic(*p.Topic, false); err != nil {
		return nil, err
	}
	if err := h.allow(ctx, Presence, *p.Topic); err != nil {
		return nil, err
	}
	peers, err := h.clusterPresence(ctx, *p.Topic)
	if err != nil {
		return nil, err
	}
	if peers == nil {
		peers = []PeerInfo{}
	}
	return presenceResult{Peers: peers}, nil
}

// watchLocked makes p's subscription to pattern one that gets rpc.join
// and rpc.leave. It is called with h.mu held, p subscribed to pattern.
func (h *Hub) watchLocked(p *Peer, pattern string) {
	if p.watch[pattern] != nil {
		return
	}
	if p.watch == nil {
		p.watch = make(map[string]*subscription)
	}
	p.watch[pattern] = h.watchers.insert(p, pattern)
}

// unwatchLocked stops the notifications of p's subscription to pattern.
func (h *Hub) unwatchLocked(p *Peer, pattern string) {
	if s := p.watch[pattern]; s != nil {
		s.remove()
		delete(p.watch, pattern)
	}
}

// presenceChanged tells watchers that p joined (rpc.join) or left
// (rpc.leave) their patterns, after p's subscriptions to the changed
// patterns were added or removed. A watcher is told only when p was not,
// or is no longer, present on its pattern through another subscription.
// It is called with h.mu held.
func (h *Hub) presenceChanged(p *Peer, method string, changed ...string) {
	if d := h.directory(); d != nil && len(changed) > 0 {
		others := make([]string, 0, len(p.subs))
		for q := range p.subs {
			if !contains(changed, q) {
				others = append(others, q)
			}
		}
		d.PresenceChanged(method == "rpc.join", p.Info(), changed, others)
	}
	if len(h.watchers.children) == 0 {
		return // nobody watches
	}
	var watchers []*subscription
	for _, q := range changed {
		watchers = h.watchers.overlapping(watchers, q)
	}
	told := make(map[*subscription]bool, len(watchers))
	for _, w := range watchers {
		if w.p == p || told[w] || p.presentBesides(w.pattern, changed) {
			continue
		}
		told[w] = true
		_ = h.post(w.p, method, presenceMessage(method, w.pattern, p.Info()))
	}
}

// presentBesides reports whether a subscription of p to a pattern not in
// except overlaps pattern.
func (p *Peer) presentBesides(pattern string, except []string) bool {
	for q := range p.subs {
		if overlap(q, pattern) && !contains(except, q) {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// presenceMessage encodes rpc.join or rpc.leave.
func presenceMessage(method, topic string, info PeerInfo) []byte {
	params, _ := jsonx.Marshal(struct {
		Topic string   `json:"topic"`
		Peer  PeerInfo `json:"peer"`
	}{topic, info})
	msg := make([]byte, 0, len(notifyHead)+len(method)+len(notifyMid)+len(params)+1)
	msg = append(msg, notifyHead...)
	msg = append(msg, method...)
	msg = append(msg, notifyMid...)
	msg = append(msg, params...)
	return append(msg, '}')
}
