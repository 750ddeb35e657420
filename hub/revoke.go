package hub

import (
	"context"
	"sort"
	"sync/atomic"
)

// This file holds Peer.Reauthorize: when what authorizes a peer changes
// on a live connection (a token with narrower grants, by rpc.auth), what
// the peer already holds is asked about again, and what is no longer
// allowed ends.

// Revoked is what Peer.Reauthorize took from a peer: the patterns of its
// subscriptions and the methods (names and patterns) it provided that the
// Policy no longer allows. It is also the params of the rpc.revoked
// notification that tells the peer.
type Revoked struct {
	Topics  []string `json:"topics"`
	Methods []string `json:"methods"`
}

// Empty reports whether nothing was revoked.
func (r Revoked) Empty() bool { return len(r.Topics) == 0 && len(r.Methods) == 0 }

// reauth is what Reauthorize needs of a peer.
type reauth struct {
	// gen counts the peer's reauthorizations. rpc.subscribe and
	// rpc.provide read it before asking the Policy and check it again
	// where they add what was asked (with h.mu, routes.mu held): when it
	// moved, they ask again, so that nothing allowed under a replaced
	// token is added after Reauthorize looked.
	gen atomic.Uint64
	// own holds the patterns the server's Go code subscribed the peer to
	// (Peer.Subscribe): no Policy decided them, and none takes them back.
	// Guarded by h.mu.
	own map[string]struct{}
}

// Reauthorize asks the hub's Policy again, with ctx (whose [Identity]
// must be the peer's, as it now is), about each subscription of the peer
// made by rpc.subscribe (Subscribe, and Presence where it asked for
// presence) and each method it provides (Provide). Those refused end at
// once, as rpc.unsubscribe and rpc.unprovide would end them: no event is
// delivered and no call forwarded under them from then on. When any
// ended, the peer is told with an rpc.revoked notification of the
// returned Revoked. Subscriptions the server's Go code made
// (Peer.Subscribe) stay.
//
// A server calls it after replacing the credentials of a live connection
// (rpc.auth), or after changing what its Policy allows.
func (p *Peer) Reauthorize(ctx context.Context) (Revoked, error) {
	h := p.h
	p.auth.gen.Add(1)

	type held struct {
		pattern  string
		presence bool
	}
	h.mu.Lock()
	subs := make([]held, 0, len(p.subs))
	for t := range p.subs {
		if _, own := p.auth.own[t]; !own {
			subs = append(subs, held{t, p.watch[t] != nil})
		}
	}
	h.mu.Unlock()
	provided := p.Provided()

	var r Revoked
	for _, s := range subs {
		if h.o.Policy(ctx, Subscribe, s.pattern) != nil || s.presence && h.o.Policy(ctx, Presence, s.pattern) != nil {
			r.Topics = append(r.Topics, s.pattern)
		}
	}
	for _, m := range provided {
		if h.o.Policy(ctx, Provide, m) != nil {
			r.Methods = append(r.Methods, m)
		}
	}
	if len(r.Topics) > 0 {
		r.Topics = h.unsubscribe(p, r.Topics)
		sort.Strings(r.Topics)
	}
	if len(r.Methods) > 0 {
		r.Methods = h.unprovide(p, r.Methods)
		if len(r.Methods) > 0 {
			h.changed()
		}
	}
	if r.Empty() {
		return r, nil
	}
	if r.Topics == nil {
		r.Topics = []string{}
	}
	if r.Methods == nil {
		r.Methods = []string{}
	}
	return r, p.conn.Notify(ctx, "rpc.revoked", r)
}
