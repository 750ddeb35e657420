package natsbroker

import (
	"encoding/json"
	"maps"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/internal/jsonx"
	"github.com/switchboard-rpc/switchboard/internal/wildcard"
)

// This file keeps, for every node, its roster: how many of its peers
// each user has, and how many of its subscriptions each pattern, so that
// a call of a user's peers or a topic's (and rpc.presence) asks only the
// nodes that have some, not every node for every peer.
//
// A roster travels as presence does: each change is a message on
// "<prefix>.presence.changed" (a peer of a user joined or left, a peer
// subscribed or unsubscribed), numbered in its node's run. The
// heartbeat (members.go) carries the run and the number of its latest
// change; a node that finds itself behind another's (a change lost on a
// link that broke, or the other node restarted) for two heartbeats, or
// that does not know another's roster at all, asks it for the whole on
// "<prefix>.presence" and takes that. A node whose roster is not known
// (yet, or ever: one of an older version) is asked every time.

// roster is a node's peers, as far as user and topic calls need them.
type roster struct {
	mark
	Users    map[string]int `json:"users,omitempty"`    // peers of each user
	Patterns map[string]int `json:"patterns,omitempty"` // subscriptions to each pattern
}

// mark names a state of a node's roster: its run, and how many changes
// it has seen in it.
type mark struct {
	Run string `json:"run"`
	Seq uint64 `json:"seq"`
}

// rosterAnswer is a node's answer to a rosterQuery: its roster.
type rosterAnswer struct {
	Node   string `json:"node"`
	Roster roster `json:"roster"`
}

func newRoster(run string) *roster {
	return &roster{mark: mark{Run: run}, Users: make(map[string]int), Patterns: make(map[string]int)}
}

// apply takes in one change. A change of the user of a peer (c.Conn)
// counts that user; another counts the patterns it changed.
func (r *roster) apply(c *presenceChange) {
	delta := -1
	if c.Join {
		delta = 1
	}
	count := func(m map[string]int, key string) {
		if m[key] += delta; m[key] <= 0 {
			delete(m, key)
		}
	}
	if c.Conn {
		count(r.Users, c.Peer.User)
	} else {
		for _, p := range c.Changed {
			count(r.Patterns, p)
		}
	}
	r.Seq = c.Seq
}

// has reports whether the node may have peers of user, or with user ""
// subscribers of topic, or with both "" any peer.
func (r *roster) has(user, topic string) bool {
	switch {
	case user != "":
		return r.Users[user] > 0
	case topic != "":
		for p := range r.Patterns {
			if wildcard.Match(p, topic) {
				return true
			}
		}
		return false
	}
	return true
}

// change records a change of this node's own roster, and tells the other
// nodes. The number it gets and the order of the messages agree: both
// are taken under d.self's lock (a leaf: the hub may hold its own).
func (d *directory) change(c presenceChange) {
	d.self.mu.Lock()
	defer d.self.mu.Unlock()
	c.Run, c.Seq = d.b.run, d.self.r.Seq+1
	d.self.r.apply(&c)
	b, _ := jsonx.Marshal(c)
	_ = d.b.nc.Publish(d.b.Subject("presence", "changed"), b)
}

// UserChanged implements hub.Directory.
func (d *directory) UserChanged(join bool, who hub.PeerInfo) {
	d.change(presenceChange{Join: join, Peer: who, Conn: true})
}

// changed takes in a change of another node's roster: in order, it is
// applied; one already seen is dropped; after a gap, the roster is asked
// for whole.
func (d *directory) rosterChanged(c *presenceChange) {
	if c.Run == "" {
		return // a node of an older version: asked every time
	}
	d.mu.Lock()
	m := d.members[c.Peer.Node]
	ask := false
	switch {
	case m == nil:
	case m.roster != nil && m.roster.Run == c.Run && c.Seq <= m.roster.Seq:
	case m.roster != nil && m.roster.Run == c.Run && c.Seq == m.roster.Seq+1,
		(m.roster == nil || m.roster.Run != c.Run) && c.Seq == 1:
		if m.roster == nil || m.roster.Run != c.Run {
			m.roster = newRoster(c.Run)
		}
		m.roster.apply(c)
	default:
		m.roster = nil
		ask = d.askingLocked(m)
	}
	d.mu.Unlock()
	if ask {
		d.askRoster(c.Peer.Node)
	}
}

// heardMark takes in the state of another node's roster its heartbeat
// announced, with d.mu held, and reports whether to ask for its roster:
// it is not known, of another run, or was behind already at the last
// heartbeat. A node that announced none is of an older version.
func (d *directory) heardMark(m *member, at *mark) bool {
	switch {
	case at == nil:
		return false
	case m.roster == nil && at.Seq == 0:
		m.roster = newRoster(at.Run) // no change yet: nothing to ask
		return false
	case m.roster == nil || m.roster.Run != at.Run:
		m.roster = nil
		return d.askingLocked(m)
	case m.roster.Seq >= at.Seq:
		m.behind = 0
		return false
	}
	// Behind: the changes may be on their way (they come by another
	// subscription); not if it was already behind what the last
	// heartbeat said.
	ask := m.behind != 0 && m.roster.Seq < m.behind
	m.behind = at.Seq
	return ask && d.askingLocked(m)
}

// askingLocked reports whether to ask m for its roster now: not more than
// once a heartbeat. d.mu held.
func (d *directory) askingLocked(m *member) bool {
	if now := time.Now(); now.Sub(m.asked) >= d.interval {
		m.asked = now
		return true
	}
	return false
}

// askRoster asks node for its roster; onRoster takes in the answer.
func (d *directory) askRoster(node string) {
	q, _ := jsonx.Marshal(presenceQuery{Node: d.b.node, Roster: true, Nodes: []string{node}})
	_ = d.b.nc.PublishRequest(d.b.Subject("presence"), d.rosters, q)
}

// answerRoster answers another node's rosterQuery with this node's own.
func (d *directory) answerRoster(reply string) {
	d.self.mu.Lock()
	a := rosterAnswer{Node: d.b.node, Roster: roster{
		mark:     d.self.r.mark,
		Users:    maps.Clone(d.self.r.Users),
		Patterns: maps.Clone(d.self.r.Patterns),
	}}
	d.self.mu.Unlock()
	b, _ := jsonx.Marshal(a)
	_ = d.b.nc.Publish(reply, b)
}

// onRoster takes in another node's roster, unless one as recent is known.
func (d *directory) onRoster(msg *nats.Msg) {
	var a rosterAnswer
	if json.Unmarshal(msg.Data, &a) != nil || a.Roster.Run == "" {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	m := d.members[a.Node]
	if m == nil || m.roster != nil && m.roster.Run == a.Roster.Run && m.roster.Seq >= a.Roster.Seq {
		return
	}
	r := newRoster(a.Roster.Run)
	r.Seq = a.Roster.Seq
	maps.Copy(r.Users, a.Roster.Users)
	maps.Copy(r.Patterns, a.Roster.Patterns)
	m.roster, m.behind = r, 0
}

// askFor returns the other nodes to ask for the peers of user, or with
// user "" the subscribers of topic, or with both "" every peer, sorted:
// those whose roster has some, and those whose roster is not known.
func (d *directory) askFor(user, topic string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]string, 0, len(d.members))
	for name, m := range d.members {
		if m.roster == nil || m.roster.has(user, topic) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
