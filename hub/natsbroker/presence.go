package natsbroker

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/internal/jsonx"
)

// This file spans presence over the nodes: rpc.presence (and
// Hub.ClusterPeers, and calls of a user's or a topic's peers) asks the
// other nodes that may have such peers (roster.go) on "<prefix>.presence"
// for them and gathers the answers; a node whose peers subscribe or leave
// tells the others on "<prefix>.presence.changed", and they pass
// rpc.join and rpc.leave on to their watchers.

// presenceWait bounds how long a presence query waits for the other
// nodes' answers; a node that has not answered by then is left out, and
// named (hub.UnansweredError).
const presenceWait = 2 * time.Second

type presenceQuery struct {
	Node   string   `json:"node"`
	Topic  string   `json:"topic,omitempty"`  // "" for every peer
	User   string   `json:"user,omitempty"`   // the peers of this user only
	Nodes  []string `json:"nodes,omitempty"`  // the nodes to answer; none: all
	Roster bool     `json:"roster,omitempty"` // asks for the node's roster (roster.go)
}

type presenceAnswer struct {
	Node  string         `json:"node"`
	Peers []hub.PeerInfo `json:"peers"`
}

// presenceChange is a change of a node's presence and roster: a peer
// subscribed to the patterns changed (Join) or unsubscribed, or, with
// Conn, a peer of a user joined the node or left it.
type presenceChange struct {
	mark
	Join    bool         `json:"join,omitempty"`
	Conn    bool         `json:"conn,omitempty"`
	Peer    hub.PeerInfo `json:"peer"`
	Changed []string     `json:"changed,omitempty"`
	Others  []string     `json:"others,omitempty"`
}

// Peers implements hub.Directory: it asks the other nodes that may have
// subscribers of topic (roster.go), or with topic "" every other node.
func (d *directory) Peers(ctx context.Context, topic string) ([]hub.PeerInfo, error) {
	return d.ask(ctx, presenceQuery{Topic: topic}, d.askFor("", topic))
}

// UserPeers implements hub.Directory: it asks the other nodes that may
// have peers of user (roster.go).
func (d *directory) UserPeers(ctx context.Context, user string) ([]hub.PeerInfo, error) {
	peers, err := d.ask(ctx, presenceQuery{User: user}, d.askFor(user, ""))
	// A node of an older version answers with all its peers.
	return slices.DeleteFunc(peers, func(p hub.PeerInfo) bool { return p.User != user }), err
}

// ask sends q to the nodes want and gathers the answers that come within
// presenceWait (or ctx). The nodes that did not answer by then (all of
// them when the link is down) are named by a *hub.UnansweredError,
// returned with the others' peers.
func (d *directory) ask(ctx context.Context, q presenceQuery, want []string) ([]hub.PeerInfo, error) {
	if len(want) == 0 {
		return nil, nil
	}
	unanswered := func(seen map[string]bool) error {
		var nodes []string
		for _, n := range want {
			if !seen[n] {
				nodes = append(nodes, n)
			}
		}
		if len(nodes) == 0 {
			return nil
		}
		return &hub.UnansweredError{Nodes: nodes}
	}
	inbox := d.b.nc.NewRespInbox()
	answers := make(chan *nats.Msg, len(want)+16)
	sub, err := d.b.nc.ChanSubscribe(inbox, answers)
	if err != nil {
		return nil, err
	}
	defer func() { _ = sub.Unsubscribe() }()
	q.Node, q.Nodes = d.b.node, want
	body, _ := jsonx.Marshal(q)
	if err := d.b.nc.PublishRequest(d.b.Subject("presence"), inbox, body); err != nil {
		return nil, unanswered(nil) // the link is down: this node's peers only
	}
	t := time.NewTimer(presenceWait)
	defer t.Stop()
	var peers []hub.PeerInfo
	seen := make(map[string]bool)
	for answered := 0; answered < len(want); {
		select {
		case msg := <-answers:
			var a presenceAnswer
			if json.Unmarshal(msg.Data, &a) != nil || seen[a.Node] {
				continue
			}
			seen[a.Node] = true
			if slices.Contains(want, a.Node) {
				answered++
			}
			peers = append(peers, a.Peers...)
		case <-t.C:
			return peers, unanswered(seen)
		case <-ctx.Done():
			return peers, unanswered(seen)
		}
	}
	return peers, nil
}

// onPresence answers another node's presence query, when it is one of
// those asked.
func (d *directory) onPresence(msg *nats.Msg) {
	var q presenceQuery
	if json.Unmarshal(msg.Data, &q) != nil || q.Node == d.b.node || msg.Reply == "" ||
		len(q.Nodes) > 0 && !slices.Contains(q.Nodes, d.b.node) {
		return
	}
	if q.Roster {
		d.answerRoster(msg.Reply)
		return
	}
	var peers []hub.PeerInfo
	if q.User != "" {
		peers = d.h.LocalUserPeers(q.User)
	} else {
		peers = d.h.LocalPeers(q.Topic)
	}
	if peers == nil {
		peers = []hub.PeerInfo{}
	}
	b, _ := jsonx.Marshal(presenceAnswer{Node: d.b.node, Peers: peers})
	_ = d.b.nc.Publish(msg.Reply, b)
}

// PresenceChanged implements hub.Directory: it tells the other nodes.
// It does so whether or not a peer there watches presence: a node that
// waited to hear of a watcher first would miss the changes made
// meanwhile. The nodes without watchers only count it in this node's
// roster.
func (d *directory) PresenceChanged(join bool, who hub.PeerInfo, changed, others []string) {
	d.change(presenceChange{Join: join, Peer: who, Changed: changed, Others: others})
}

// onPresenceChanged passes another node's presence change on to this
// node's watchers.
func (d *directory) onPresenceChanged(msg *nats.Msg) {
	var c presenceChange
	if json.Unmarshal(msg.Data, &c) != nil || c.Peer.Node == "" || c.Peer.Node == d.b.node {
		return
	}
	if c.Join {
		// A node just started may be heard of here before its first
		// announcement is taken in (another subscription): a presence
		// query made after this join must ask it too.
		d.heard(c.Peer.Node)
	}
	d.rosterChanged(&c)
	if !c.Conn && len(c.Changed) > 0 {
		d.h.RemotePresenceChanged(c.Join, c.Peer, c.Changed, c.Others)
	}
}
