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
// Hub.ClusterPeers) asks every other node on "<prefix>.presence" for its
// peers and gathers the answers; a node whose peers subscribe or leave
// tells the others on "<prefix>.presence.changed", and they pass
// rpc.join and rpc.leave on to their watchers.

// presenceWait bounds how long a presence query waits for the other
// nodes' answers; a node that has not answered by then is left out, and
// named (hub.UnansweredError).
const presenceWait = 2 * time.Second

type presenceQuery struct {
	Node  string `json:"node"`
	Topic string `json:"topic,omitempty"` // "" for every peer
}

type presenceAnswer struct {
	Node  string         `json:"node"`
	Peers []hub.PeerInfo `json:"peers"`
}

type presenceChange struct {
	Join    bool         `json:"join,omitempty"`
	Peer    hub.PeerInfo `json:"peer"`
	Changed []string     `json:"changed"`
	Others  []string     `json:"others,omitempty"`
}

// Peers implements hub.Directory: it asks every other node it knows and
// gathers the answers that come within presenceWait (or ctx). The nodes
// that did not answer by then (all of them when the link is down) are
// named by a *hub.UnansweredError, returned with the others' peers.
func (d *directory) Peers(ctx context.Context, topic string) ([]hub.PeerInfo, error) {
	want := d.names()
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
	q, _ := jsonx.Marshal(presenceQuery{Node: d.b.node, Topic: topic})
	if err := d.b.nc.PublishRequest(d.b.Subject("presence"), inbox, q); err != nil {
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

// onPresence answers another node's presence query.
func (d *directory) onPresence(msg *nats.Msg) {
	var q presenceQuery
	if json.Unmarshal(msg.Data, &q) != nil || q.Node == d.b.node || msg.Reply == "" {
		return
	}
	peers := d.h.LocalPeers(q.Topic)
	if peers == nil {
		peers = []hub.PeerInfo{}
	}
	b, _ := jsonx.Marshal(presenceAnswer{Node: d.b.node, Peers: peers})
	_ = d.b.nc.Publish(msg.Reply, b)
}

// PresenceChanged implements hub.Directory: it tells the other nodes.
// It does so whether or not a peer there watches presence: a node that
// waited to hear of a watcher first would miss the changes made
// meanwhile. The nodes without watchers drop the message at once.
func (d *directory) PresenceChanged(join bool, who hub.PeerInfo, changed, others []string) {
	b, _ := jsonx.Marshal(presenceChange{Join: join, Peer: who, Changed: changed, Others: others})
	_ = d.b.nc.Publish(d.b.Subject("presence", "changed"), b)
}

// onPresenceChanged passes another node's presence change on to this
// node's watchers.
func (d *directory) onPresenceChanged(msg *nats.Msg) {
	var c presenceChange
	if json.Unmarshal(msg.Data, &c) != nil || c.Peer.Node == "" || c.Peer.Node == d.b.node || len(c.Changed) == 0 {
		return
	}
	if c.Join {
		// A node just started may be heard of here before its first
		// announcement is taken in (another subscription): a presence
		// query made after this join must ask it too.
		d.heard(c.Peer.Node)
	}
	d.h.RemotePresenceChanged(c.Join, c.Peer, c.Changed, c.Others)
}
