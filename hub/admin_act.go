package hub

import (
	"context"
	"sort"
	"time"
)

// What an operator does to peers (the admin API, docs/operations.md):
// disconnect them, refuse a user's older tokens, take subscriptions away.
// admin_cluster.go does each on every node of a cluster.

// CloseKicked is the default close code of a peer an operator
// disconnects (admin.disconnect): 4003, in the range PROTOCOL.md leaves to
// applications, beside 4001 (token expired).
const CloseKicked = 4003

// Disconnect selects the peers [Hub.Disconnect] closes: one peer by id,
// or every peer of a user.
type Disconnect struct {
	Peer   string `json:"peer,omitempty"`
	User   string `json:"user,omitempty"`
	Code   int    `json:"code,omitempty"`   // the close code; default CloseKicked
	Reason string `json:"reason,omitempty"` // the close reason, at most 123 bytes
	// Revoke refuses, from now until the hub restarts, the tokens of
	// User issued before Before (see [Hub.RevokedBefore]).
	Revoke bool      `json:"revoke,omitempty"`
	Before time.Time `json:"before,omitzero"` // default: now
}

// selectPeers returns this hub's peers that an admin request names: the
// peer of that id (when it is the user's, if user is set too), or else
// every peer of user.
func (h *Hub) selectPeers(id, user string) []*Peer {
	if id == "" {
		if user == "" {
			return nil
		}
		return h.peersOf(user)
	}
	if p := h.Peer(id); p != nil && (user == "" || userOf(p.identity) == user) {
		return []*Peer{p}
	}
	return nil
}

// disconnectLocal closes this hub's peers that d selects, and records
// the revocation; it returns the ids of the peers closed, sorted.
func (h *Hub) disconnectLocal(d Disconnect) []string {
	if d.Revoke && d.User != "" {
		h.Revoke(d.User, d.Before)
	}
	gone := h.selectPeers(d.Peer, d.User)
	ids := make([]string, 0, len(gone))
	for _, p := range gone {
		_ = p.conn.CloseWith(d.Code, d.Reason)
		ids = append(ids, p.id)
	}
	sort.Strings(ids)
	return ids
}

// peersOf returns the peers of user.
func (h *Hub) peersOf(user string) []*Peer {
	h.pmu.RLock()
	defer h.pmu.RUnlock()
	var out []*Peer
	for _, p := range h.peers {
		if userOf(p.identity) == user {
			out = append(out, p)
		}
	}
	return out
}

// Revoke refuses the tokens of user issued before t, from now until the
// hub restarts: a server that authenticates peers asks [Hub.RevokedBefore]
// (package server does). A later Revoke of the same user with an earlier
// t changes nothing.
func (h *Hub) Revoke(user string, t time.Time) {
	h.adm.mu.Lock()
	defer h.adm.mu.Unlock()
	if h.adm.revoked == nil {
		h.adm.revoked = make(map[string]time.Time)
	}
	if t.After(h.adm.revoked[user]) {
		h.adm.revoked[user] = t
	}
}

// RevokedBefore returns the time before which the tokens of user were
// revoked, and false when none were.
func (h *Hub) RevokedBefore(user string) (time.Time, bool) {
	h.adm.mu.Lock()
	defer h.adm.mu.Unlock()
	t, ok := h.adm.revoked[user]
	return t, ok
}

// Unsubscribe selects the subscriptions [Hub.Unsubscribe] ends.
type Unsubscribe struct {
	Peer  string `json:"peer,omitempty"` // this peer's
	User  string `json:"user,omitempty"` // or every peer's of this user
	Topic string `json:"topic"`          // the subscriptions to patterns this one covers: "chat.>" ends "chat.room1", "chat.*" and "chat.>"
}

// Unsubscribed is one peer's subscriptions that [Hub.Unsubscribe] ended.
type Unsubscribed struct {
	Peer   string   `json:"peer"`
	Node   string   `json:"node,omitempty"`
	Topics []string `json:"topics"`
}

// unsubscribeLocal ends the subscriptions of this hub's peers that u
// selects, telling each peer with rpc.revoked as [Peer.Reauthorize]
// does.
func (h *Hub) unsubscribeLocal(ctx context.Context, u Unsubscribe) []Unsubscribed {
	peers := h.selectPeers(u.Peer, u.User)
	out := []Unsubscribed{}
	for _, p := range peers {
		var ending []string
		for _, t := range p.Topics() {
			if covers(u.Topic, t) {
				ending = append(ending, t)
			}
		}
		if len(ending) == 0 {
			continue
		}
		gone := h.unsubscribe(p, ending)
		if len(gone) == 0 {
			continue
		}
		sort.Strings(gone)
		_ = p.conn.Notify(ctx, "rpc.revoked", Revoked{Topics: gone, Methods: []string{}})
		out = append(out, Unsubscribed{Peer: p.id, Node: h.node(), Topics: gone})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Peer < out[j].Peer })
	return out
}

// Published is what [Hub.Broadcast] did with one topic.
type Published struct {
	Topic     string `json:"topic"`
	Delivered int    `json:"delivered"` // subscribers reached on this node
	Position  uint64 `json:"position"`  // the event's position in the stream
}

// Broadcast publishes data on each topic, as [Hub.Publish] does (not
// asking the Policy), and returns what became of each, in order. It stops
// at the first topic that fails, returning what was published before it.
func (h *Hub) Broadcast(ctx context.Context, topics []string, data []byte) ([]Published, error) {
	for _, t := range topics {
		if err := h.checkTopic(t, false); err != nil {
			return nil, err
		}
	}
	out := make([]Published, 0, len(topics))
	for _, t := range topics {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		n, at, err := h.publish(ctx, t, data)
		if err != nil {
			return out, err
		}
		out = append(out, Published{Topic: t, Delivered: n, Position: at.Seq})
	}
	return out, nil
}
