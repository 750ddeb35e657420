package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/switchboard-rpc/switchboard/internal/jsonx"
	"github.com/switchboard-rpc/switchboard/peer"
)

// This file links a hub to the other hubs of a cluster. Without a Broker
// (the default) a hub is alone and publishing is exactly as it always
// was: the event is numbered by the Store and fanned out, nothing more.
//
// A Broker that only relays (hub/natsbroker over core NATS) is handed
// each event once it has reached this hub's own subscribers, under the
// publish lock, so that it sends events in the order they were
// delivered here; it hands the other nodes' events to the hub's
// BrokerHandle.Deliver, which fans them out like a local publish,
// numbered by this hub's Store, and does not send them on. Each node has its own positions and epoch.
//
// A Broker that is also a Sequencer (hub/natsbroker with JetStream)
// numbers events itself: publishing appends the event to its stream and
// delivers nothing; every node, this one too, reads the stream back and
// hands each event to BrokerHandle.DeliverAt with its position there.
// Every node then has the same positions and epoch, and the same history,
// kept in its Store as the events go by.

// A Broker links a hub to the other hubs of a cluster. hub/natsbroker
// implements it over NATS. Set it as Options.Broker: [New] hands the
// broker a [BrokerHandle], through which the broker hands the hub the
// events of other nodes ([BrokerHandle.Deliver], or
// [BrokerHandle.DeliverAt] for a [Sequencer]) and tells it of
// interruptions ([BrokerHandle.Interrupted]).
type Broker interface {
	// Register gives the broker the handle of the hub it links. [New]
	// calls it once, before it returns; the broker keeps the handle. A
	// broker links one hub.
	Register(h *BrokerHandle)

	// Node names this hub in the cluster, for logs and Stats.
	Node() string

	// Forward sends to the other nodes an event published on this hub,
	// once this hub has delivered it to its own subscribers. The hub
	// calls it with its publish lock held, in the order events reach
	// subscribers here, so it must not block: an event it cannot send
	// at once (the link is down) stays on this node. The broker may keep
	// data: the caller does not modify it. A Sequencer's Forward is not
	// called.
	Forward(topic string, data []byte)

	// Stats returns the broker's counters, reported in the hub's Stats.
	Stats() BrokerStats
}

// A Sequencer is a [Broker] that gives events their positions: it appends
// them to a stream that every node of the cluster reads back in the same
// order (hub/natsbroker with JetStream). A hub with a Sequencer delivers
// an event not when it is published but when the Sequencer hands it back
// through [BrokerHandle.DeliverAt], with its position in the stream; its epoch is
// the Sequencer's.
type Sequencer interface {
	Broker

	// Epoch names the stream the Sequencer reads now. When the stream is
	// replaced (deleted and created again, a NATS server that lost its
	// store), the Sequencer calls [BrokerHandle.Restart] with the new name before
	// it hands the hub any event of the new stream.
	Epoch() string

	// Sequence appends an event to the stream and returns its position
	// and the epoch of the stream it was appended to. It may block, until
	// ctx ends.
	Sequence(ctx context.Context, topic string, data []byte) (seq uint64, epoch string, err error)
}

// BrokerStats are a Broker's counters.
type BrokerStats struct {
	Connected   bool   // linked to the other nodes now, and able to publish (for a Sequencer, its stream available)
	Sent        uint64 // events sent to the other nodes (appended to the stream, for a Sequencer)
	Received    uint64 // events received from the other nodes (read from the stream, for a Sequencer)
	Unsent      uint64 // events that stayed on this node: the link was down or refused them
	Lost        uint64 // events from other nodes known to be lost (a consumer too slow)
	Disconnects uint64 // times the link was lost
	Resets      uint64 // times the stream was found replaced, and its new epoch adopted (a Sequencer)
}

// ClusterStats describe a hub's place in a cluster, in [Stats].
type ClusterStats struct {
	Node string // the node's name; "" for a hub alone
	BrokerStats
}

// Cluster timing.
const (
	// sequencedWait bounds how long a publish through a Sequencer waits
	// for its event to come back, to count the subscribers it reached
	// on this node, and how long a subscription resuming from a
	// position this node has not read yet waits for it.
	sequencedWait = 5 * time.Second

	// recentCounts is how many of the latest sequenced events remember
	// how many subscribers they reached, for a publish whose event came
	// back before its Sequence call returned.
	recentCounts = 1024
)

// sequenced is the state of a hub whose Broker is a Sequencer. Guarded by
// h.mu.
type sequenced struct {
	waiters []*seqWaiter
	recent  [recentCounts]struct {
		seq uint64
		n   int
	}
}

// seqWaiter waits for the event at seq to be delivered on this node.
type seqWaiter struct {
	seq  uint64
	n    int // subscribers it reached here, when its seq is exactly seq
	done chan struct{}
}

// positionedStore is a Store that can keep events at the positions a
// Sequencer gave them ([MemoryStore] is one).
type positionedStore interface {
	AppendAt(topic string, seq uint64, data []byte) error
	Restart(epoch string)
}

// A BrokerHandle is how a [Broker] reaches the hub it links: [New] hands
// it to the Broker's Register, and the broker hands the hub the other
// nodes' events, and (as a [Directory]) their requests, through it. Its
// methods are safe for concurrent use.
type BrokerHandle struct{ h *Hub }

// Deliver hands the hub an event published on another node of its
// cluster: the hub numbers it, keeps it in its history and fans it out to
// its subscribers as [Hub.Publish] would, but does not forward it, and
// returns how many subscribers it reached. topic must be a valid topic and
// data valid JSON, which the hub may keep. A Broker calls it, one event at
// a time, in the order events should reach subscribers.
func (b *BrokerHandle) Deliver(topic string, data []byte) int {
	n, _, _ := b.h.deliver(topic, data, 0, false)
	return n
}

// DeliverAt is Deliver for the events of a [Sequencer], with the position
// the stream gave them: positions must increase from one call to the next
// (gaps are allowed: what they skip counts as dropped from the history).
// It returns how many subscribers the event reached here, and an error
// (and delivers nothing) when seq does not follow the latest position.
func (b *BrokerHandle) DeliverAt(seq uint64, topic string, data []byte) (int, error) {
	if seq == 0 {
		return 0, fmt.Errorf("hub: deliver %s at position 0", topic)
	}
	n, _, err := b.h.deliver(topic, data, seq, false)
	return n, err
}

// Interrupted tells the hub that events from other nodes may have been
// lost (the link to them broke, or could not keep up): a subscription
// resuming from the latest position or before is told it did not recover
// everything ("recovered": false), since the hub cannot know what it
// missed (it would have come after that position).
func (b *BrokerHandle) Interrupted() {
	h := b.h
	h.mu.Lock()
	h.gap = h.last + 1
	h.mu.Unlock()
}

// CloseRestart is the WebSocket close code (1012, service restart) with
// which [BrokerHandle.Restart] and [BrokerHandle.Missed] close the
// connections of the subscribers, so that they resume and learn what they
// missed.
const CloseRestart = 1012

// Missed tells the hub that events from other nodes were lost (a gap in
// a node's events): as with [BrokerHandle.Interrupted], a subscription
// resuming from before now is told it did not recover everything, and the
// peers that subscribe are closed with [CloseRestart] and reason, so that
// their clients resume at once and report what they missed, rather than
// go on unaware.
func (b *BrokerHandle) Missed(reason string) {
	h := b.h
	h.mu.Lock()
	h.gap = h.last + 1
	subs := h.subscribersLocked()
	h.mu.Unlock()
	for _, p := range subs {
		_ = p.conn.CloseWith(CloseRestart, reason)
	}
}

// Restart tells a hub whose Broker is a [Sequencer] that the stream it
// reads was replaced by another, named epoch: the hub forgets its
// history, takes the new epoch as a hub restarted alone would, and
// closes the peers that subscribe with [CloseRestart] and reason. Their
// clients resume from a position of the old epoch and are told they did
// not recover everything ("recovered": false). Publishes waiting for
// their event under the old epoch fail. The Sequencer then hands the hub
// the new stream's events from its first position.
func (b *BrokerHandle) Restart(epoch, reason string) {
	h := b.h
	h.mu.Lock()
	h.store.(positionedStore).Restart(epoch)
	h.ep.Store(newEpochName(epoch))
	h.last, h.gap = 0, 0
	for _, w := range h.sq.waiters {
		close(w.done) // w.n stays 0 and w.epoch differs: not delivered
	}
	clear(h.sq.waiters)
	h.sq.waiters = h.sq.waiters[:0]
	h.sq.recent = [recentCounts]struct {
		seq uint64
		n   int
	}{}
	subs := h.subscribersLocked()
	h.mu.Unlock()
	for _, p := range subs {
		_ = p.conn.CloseWith(CloseRestart, reason)
	}
}

// The requests of the other nodes, for a Broker that is a [Directory].
// Each is served where its concern lives (cluster_route.go, discover.go).

// ServeRemoteCall serves a call that another node of the cluster sends to
// this hub: to a peer of this hub that provides call.Method, or, with
// call.Peer set, to that peer, and returns the peer's answer unchanged
// (the raw result, or its *peer.Error). Its own answers are -32601 (no
// such provider), -32007 (no such peer here), -32003 (every provider
// stayed busy for the forward timeout) and -32006 (the peer disconnected
// before answering). ctx carries the caller's cancellation (the peer is
// sent rpc.cancel) and deadline.
func (b *BrokerHandle) ServeRemoteCall(ctx context.Context, call RemoteCall) (json.RawMessage, error) {
	return b.h.serveRemoteCall(ctx, call)
}

// HasPeer reports whether a peer with the given id is connected to this
// hub, so that a Directory can accept a call to it before serving it.
func (b *BrokerHandle) HasPeer(id string) bool { return b.h.Peer(id) != nil }

// LocalPeers returns how this hub's peers show in presence, with their
// node: those an event on topic would reach, or with topic "" all of
// them.
func (b *BrokerHandle) LocalPeers(topic string) []PeerInfo { return b.h.localPeers(topic) }

// RemotePresenceChanged tells this hub's peers that watch presence that a
// peer of another node joined (or left) the patterns changed, being still
// subscribed to others: the other node's [Directory.PresenceChanged].
func (b *BrokerHandle) RemotePresenceChanged(join bool, who PeerInfo, changed, others []string) {
	b.h.remotePresenceChanged(join, who, changed, others)
}

// ProvidedMethods returns, for each peer of this hub that provides
// methods, its id, the names and patterns it provides and the forwarded
// calls in flight to it: what a Directory tells the other nodes.
func (b *BrokerHandle) ProvidedMethods() []Provider { return b.h.providedMethods() }

// DescribeProvided returns the method objects (of OpenRPC documents) of
// the methods this hub's peers provide, as each provider's rpc.discover
// describes them: what a [Describer] answers the other nodes. The Policy
// and the application's own methods are the asking node's to apply.
func (b *BrokerHandle) DescribeProvided(ctx context.Context) []json.RawMessage {
	local := b.h.describeLocal(ctx)
	out := make([]json.RawMessage, len(local))
	for i, m := range local {
		out[i] = m.JSON
	}
	return out
}

// subscribersLocked returns the peers that subscribe to something; h.mu
// held.
func (h *Hub) subscribersLocked() []*Peer {
	var out []*Peer
	for _, p := range h.peers {
		if len(p.subs) > 0 {
			out = append(out, p)
		}
	}
	return out
}

// epochName is a hub's epoch, with its JSON text.
type epochName struct {
	name string
	json []byte
}

func newEpochName(epoch string) *epochName {
	b, _ := jsonx.Marshal(epoch)
	return &epochName{epoch, b}
}

// publishSequenced publishes through the Sequencer: the event is
// delivered, here and everywhere, when the stream hands it back. It
// returns how many subscribers it reached on this node, or 0 when it did
// not come back within sequencedWait (or ctx): it is in the stream, and
// its subscribers get it.
//
// It never answers with a position of an epoch this hub no longer reads:
// when the stream was replaced before the event came back, the publish
// fails, since the event is in a stream that nobody reads any more (or,
// in the new one, at a position this hub has yet to learn).
func (h *Hub) publishSequenced(ctx context.Context, topic string, data []byte) (int, Position, error) {
	h.stats.published.Add(1)
	seq, epoch, err := h.seqr.Sequence(ctx, topic, data)
	if err != nil {
		return 0, Position{}, peer.Errorf(peer.CodeApplication, "publish on %s: cluster stream unavailable: %v", topic, err)
	}
	n, _ := h.waitDelivered(ctx, epoch, seq)
	if h.ep.Load().name != epoch {
		return 0, Position{}, peer.Errorf(peer.CodeApplication, "publish on %s: cluster stream replaced: the event may be lost", topic)
	}
	return n, Position{Epoch: epoch, Seq: seq}, nil
}

// waitDelivered waits until the event at seq of epoch was delivered on
// this node, within sequencedWait, and returns how many subscribers it
// reached here (0 when not known) and whether it was delivered. An event
// of another epoch than the hub's is not delivered.
func (h *Hub) waitDelivered(ctx context.Context, epoch string, seq uint64) (int, bool) {
	h.mu.Lock()
	if h.ep.Load().name != epoch {
		h.mu.Unlock()
		return 0, false
	}
	if h.last >= seq {
		n := h.recentCount(seq)
		h.mu.Unlock()
		return n, true
	}
	w := &seqWaiter{seq: seq, done: make(chan struct{})}
	h.sq.waiters = append(h.sq.waiters, w)
	h.mu.Unlock()

	t := time.NewTimer(sequencedWait)
	defer t.Stop()
	select {
	case <-w.done:
		h.mu.Lock()
		defer h.mu.Unlock()
		return w.n, h.ep.Load().name == epoch
	case <-ctx.Done():
	case <-t.C:
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, x := range h.sq.waiters {
		if x == w {
			h.sq.waiters = append(h.sq.waiters[:i], h.sq.waiters[i+1:]...)
			break
		}
	}
	select {
	case <-w.done: // came meanwhile
		return w.n, h.ep.Load().name == epoch
	default:
		return 0, false
	}
}

// recentCount returns how many subscribers the event at seq reached, if
// it is among the latest; h.mu held.
func (h *Hub) recentCount(seq uint64) int {
	r := &h.sq.recent[seq%recentCounts]
	if r.seq == seq {
		return r.n
	}
	return 0
}

// sequencedLocked records that the event at seq reached n subscribers and
// wakes whoever waited for it; h.mu held.
func (h *Hub) sequencedLocked(seq uint64, n int) {
	r := &h.sq.recent[seq%recentCounts]
	r.seq, r.n = seq, n
	if len(h.sq.waiters) == 0 {
		return
	}
	kept := h.sq.waiters[:0]
	for _, w := range h.sq.waiters {
		if w.seq > seq {
			kept = append(kept, w)
			continue
		}
		if w.seq == seq {
			w.n = n
		}
		close(w.done)
	}
	clear(h.sq.waiters[len(kept):])
	h.sq.waiters = kept
}

// clusterStats returns the node's name and its broker's counters.
func (h *Hub) clusterStats() ClusterStats {
	if h.o.Broker == nil {
		return ClusterStats{}
	}
	return ClusterStats{Node: h.o.Broker.Node(), BrokerStats: h.o.Broker.Stats()}
}
