package hub

import (
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-rpc/switchboard/internal/jsonx"
)

// This file is the operator's view of the hub's peers (the admin API of
// the server, docs/operations.md): who is connected, from where, as whom,
// subscribed to what, providing what, holding what. admin_act.go holds
// what an operator does to them, admin_cluster.go spans both over the
// nodes of a cluster.

// adminPeer is what the admin API shows of a peer beyond its id and
// identity.
type adminPeer struct {
	since  time.Time              // set by Join
	remote atomic.Pointer[string] // SetRemote's
}

// adminHub is the hub's state for the admin API.
type adminHub struct {
	started time.Time // set by New

	mu       sync.Mutex
	revoked  map[string]time.Time // user: tokens issued before this are refused (admin_act.go)
	refusals RefusalLister        // SetRefusals's (admin_refusals.go)
}

// SetRemote records the network address the peer connected from (the
// client's, behind a trusted proxy), which the admin API shows. A server
// calls it once the peer has joined.
func (p *Peer) SetRemote(addr string) { p.adm.remote.Store(&addr) }

// Remote returns the address SetRemote recorded, or "".
func (p *Peer) Remote() string {
	if r := p.adm.remote.Load(); r != nil {
		return *r
	}
	return ""
}

// Since returns when the peer joined the hub.
func (p *Peer) Since() time.Time { return p.adm.since }

// PeerDetail is how the admin API shows a peer.
type PeerDetail struct {
	ID       string    `json:"id"`
	User     string    `json:"user,omitempty"`
	Remote   string    `json:"remote,omitempty"`
	Since    time.Time `json:"since"`
	Node     string    `json:"node,omitempty"`
	Topics   []string  `json:"topics"`       // the patterns it is subscribed to
	Methods  []string  `json:"methods"`      // the names and patterns it provides
	InFlight int       `json:"in_flight"`    // calls it is serving or being served for it
	Queued   int64     `json:"queued_bytes"` // bytes waiting to be written to it
}

// Detail returns how the admin API shows p now.
func (p *Peer) Detail() PeerDetail {
	l := p.conn.Load()
	return PeerDetail{
		ID: p.id, User: userOf(p.identity), Remote: p.Remote(), Since: p.adm.since, Node: p.h.node(),
		Topics: p.Topics(), Methods: p.Provided(),
		InFlight: l.Serving + l.Calling, Queued: l.Queued,
	}
}

// PeerQuery selects and pages the peers [Hub.ListPeers] lists. The zero
// value lists the first [DefaultPageSize] peers.
type PeerQuery struct {
	User  string `json:"user,omitempty"`   // only the peers of this user
	Topic string `json:"topic,omitempty"`  // only those subscribed to a pattern that overlaps this one (some topic matches both)
	Node  string `json:"node,omitempty"`   // only those of this node of the cluster
	After string `json:"cursor,omitempty"` // only those whose id sorts after this: the Next of the page before
	Limit int    `json:"limit,omitempty"`  // at most this many; default DefaultPageSize, at most MaxPageSize
}

// PeerPage is one page of [Hub.ListPeers], sorted by id.
type PeerPage struct {
	Peers []PeerDetail `json:"peers"`
	// Next is the cursor of the next page (PeerQuery.After), "" when
	// this page is the last.
	Next string `json:"next,omitempty"`
}

// The bounds of a page of the admin API's listings.
const (
	DefaultPageSize = 100
	MaxPageSize     = 1000
)

func pageSize(n int) int {
	if n <= 0 {
		return DefaultPageSize
	}
	return min(n, MaxPageSize)
}

// sizedPeer is a peer of a page with the size of its encoding.
type sizedPeer struct {
	d    PeerDetail
	json []byte
}

// localPeerPage lists this hub's peers that q selects, at most q.Limit,
// whose encoding takes at most room bytes (at least one is listed); more
// reports whether others were left for the next page.
func (h *Hub) localPeerPage(q PeerQuery, room int) (page []sizedPeer, more bool) {
	limit := pageSize(q.Limit)
	if q.Node != "" && q.Node != h.node() {
		return nil, false
	}
	h.pmu.RLock()
	cands := make([]*Peer, 0, len(h.peers))
	for id, p := range h.peers {
		if id > q.After && (q.User == "" || userOf(p.identity) == q.User) {
			cands = append(cands, p)
		}
	}
	h.pmu.RUnlock()
	sort.Slice(cands, func(i, j int) bool { return cands[i].id < cands[j].id })
	if q.Topic != "" {
		h.mu.Lock()
		kept := cands[:0]
		for _, p := range cands {
			if len(kept) > limit {
				break
			}
			for t := range p.subs {
				if overlap(t, q.Topic) {
					kept = append(kept, p)
					break
				}
			}
		}
		h.mu.Unlock()
		cands = kept
	}
	used := len(`{"peers":[],"next":""}`) + 64 // the next cursor is an id: ids are short
	for i, p := range cands {
		if i == limit {
			return page, true
		}
		d := p.Detail()
		b, _ := jsonx.Marshal(d)
		if used += len(b) + 1; used > room && len(page) > 0 {
			return page, true
		}
		page = append(page, sizedPeer{d, b})
	}
	return page, false
}

// covers reports whether every topic that pattern s matches, pattern p
// matches too.
func covers(p, s string) bool {
	for {
		pw, prest, pmore := strings.Cut(p, ".")
		sw, srest, smore := strings.Cut(s, ".")
		switch {
		case pw == ">":
			return true // s has a word here, which ">" takes, and any more
		case sw == ">", pw != "*" && pw != sw:
			return false
		case !pmore || !smore:
			return pmore == smore
		}
		p, s = prest, srest
	}
}
