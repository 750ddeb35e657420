package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// This file is the broker seam: everything a hub asks of the broker that
// links it to the other hubs of a cluster, and everything the broker may
// ask of the hub. Without a Broker (the default) a hub is alone: an event
// is numbered by the Store and fanned out, nothing more.
//
// A broker is one of four, each the one before with more, which the hub
// finds by type assertion on Options.Broker:
//
//   - A [Broker] relays events. The hub hands it each event once the
//     event has reached this hub's own subscribers, under the publish
//     lock, so that it sends events in the order they were delivered
//     here ([Broker.Forward]); the broker hands the other nodes' events
//     to [BrokerHandle.Deliver], which fans them out like a local
//     publish, numbered by this hub's Store, and does not send them on.
//     Each node has its own positions and epoch.
//   - A [Sequencer] gives events their positions: publishing appends the
//     event to its stream and delivers nothing; every node, this one
//     too, reads the stream back and hands each event to
//     [BrokerHandle.DeliverAt] with its position there. Every node then
//     has the same positions, epoch and history (sequenced.go is the
//     hub's side).
//   - A [Directory] knows the peers of the other nodes: the methods
//     they provide, their presence, and how to carry a call to one of
//     them (cluster_route.go is the hub's side).
//   - A [Describer] describes the methods the other nodes' peers
//     provide, for rpc.discover.
//
// The broker reaches the hub through the [BrokerHandle] that [New] gives
// it: the other nodes' events, interruptions of the link, and the other
// nodes' requests (calls, presence, provided methods).
//
// hub/membroker links hubs in one process, a reference for tests;
// hub/natsbroker links them over NATS (a Sequencer with JetStream).
// hub/brokertest checks that a broker keeps the promises below, as the
// hub relies on them: both brokers pass it.

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

// UnansweredError is the error of [Directory.Peers] and of the admin
// API's methods ([Hub.ListPeers]...) when some nodes did not answer in
// time (or could not be asked: the link was down): the result returned
// with it is that of the other nodes. An rpc.call to a user or a topic
// reports them in its answer ("incomplete": true, "unanswered": [nodes]),
// an admin method in its result ("unanswered": [nodes]).
type UnansweredError struct {
	Nodes []string // sorted
}

func (e *UnansweredError) Error() string {
	return fmt.Sprintf("hub: nodes %v did not answer in time", e.Nodes)
}

// ClusterStats describe a hub's place in a cluster, in [Stats].
type ClusterStats struct {
	Node string // the node's name; "" for a hub alone
	BrokerStats
}

// A Directory is a [Broker] that knows the peers of the other nodes of
// its cluster and carries calls to them. The hub asks it when no peer of
// its own provides a method, when asked for presence, and for the Go API
// (ClusterPeers, CallPeer); it tells it when its peers provide or
// withdraw methods and when their presence changes. A Directory hands the
// other nodes' requests to the hub through its [BrokerHandle]:
// [BrokerHandle.ServeRemoteCall], [BrokerHandle.LocalPeers],
// [BrokerHandle.LocalUserPeers] and [BrokerHandle.RemotePresenceChanged].
type Directory interface {
	Broker

	// Provides reports whether a peer on another node provides method,
	// as far as the directory knows. It is called for every call of a
	// method the hub does not serve, so it must be quick.
	Provides(method string) bool

	// Route sends a call (or notification) of call.Method to a peer on
	// another node that provides it, the one with the fewest calls in
	// flight as far as known, or with call.Peer set, to that peer; and
	// returns its answer as [peer.Conn.Forward] does: the raw result, or
	// the peer's *peer.Error. call.Progress receives the peer's
	// rpc.progress data. When ctx is cancelled the peer is sent
	// rpc.cancel and Route waits a while for its answer (normally
	// -32002); when ctx's deadline passes it returns at once. It returns
	// -32006 when the peer or its node is lost before answering, and
	// -32601 when no other node provides the method, -32007 when none has
	// the peer. With call.Node set, only that node is asked for the peer.
	Route(ctx context.Context, call RemoteCall) (json.RawMessage, error)

	// RouteFunc is Route for a call of a peer whose node is known
	// (call.Peer and call.Node set), without the wait: it returns at
	// once, and done gets what Route would have returned, once, on
	// whichever goroutine learns it; done must not block. When ctx ends
	// (or its deadline passes) the peer is sent rpc.cancel and done gets
	// ctx's error at once (or the -32003 of the peer's node, which knows
	// the deadline too, if that comes first). call.Progress is not
	// called. A call of every peer of a user or a topic makes one per
	// peer of the other nodes.
	RouteFunc(ctx context.Context, call RemoteCall, done func(json.RawMessage, error))

	// Peers returns the peers of the other nodes that an event on topic
	// would reach, or with topic "" all of them, each with its Node set.
	// It need not ask a node it knows has no subscriber of topic (from
	// [Directory.PresenceChanged] there). Nodes asked that do not
	// answer in time are left out, and named by an [*UnansweredError]
	// returned with the peers of those that did.
	Peers(ctx context.Context, topic string) ([]PeerInfo, error)

	// UserPeers is Peers for the peers of the other nodes whose user is
	// user. It need not ask a node it knows has none (from
	// [Directory.UserChanged] there); nodes asked that do not answer in
	// time are named by an [*UnansweredError].
	UserPeers(ctx context.Context, user string) ([]PeerInfo, error)

	// UserChanged tells the other nodes that a peer of this hub with a
	// user (who.User is not "") joined the hub or left it. The hub calls
	// it after [Hub.Join] and in [Hub.Leave], once per peer each; it
	// must not block.
	UserChanged(join bool, who PeerInfo)

	// Changed tells the directory that the methods this hub's peers
	// provide changed: it should tell the other nodes. It must not block.
	Changed()

	// PresenceChanged tells the other nodes that a peer of this hub
	// joined (or left) the patterns changed, being still subscribed to
	// others. The hub calls it with a lock held: it must not block.
	PresenceChanged(join bool, who PeerInfo, changed, others []string)
}

// A Describer is a [Directory] that also describes the methods the peers
// of the other nodes provide, so that rpc.discover on any node lists the
// methods of the whole cluster. Each node answers with
// [BrokerHandle.DescribeProvided].
type Describer interface {
	Directory

	// DescribeRemote returns the method objects (of OpenRPC documents,
	// each with its "name") of the methods the peers of the other nodes
	// provide, as their providers describe them. The methods of a node
	// that does not answer in time, or before ctx ends, are left out, as
	// those of a provider that does not answer rpc.discover are.
	DescribeRemote(ctx context.Context) []json.RawMessage
}

// RemoteCall is a call that crosses nodes: to a provider of Method on
// another node, or with Peer set, to that peer wherever it is.
type RemoteCall struct {
	Method       string
	Params       json.RawMessage
	Notification bool
	Peer         string                     // a peer's id, or "" for any provider of Method
	Node         string                     // with Peer, the node it is connected to, if known
	Progress     func(data json.RawMessage) // the callee's rpc.progress data; may be nil

	// MaxResult, when positive, is the largest result the caller can
	// take, in bytes: the callee's node sends back no larger one, and
	// Route returns an error that is [ErrTooLarge] instead. A call of
	// several peers sets it to what its answer has room for, so that no
	// node sends what would be left out anyway.
	MaxResult int
}

// ErrTooLarge is what [Directory.Route] returns (wrapped) when the
// peer's result was larger than [RemoteCall.MaxResult] and so was not
// sent back.
var ErrTooLarge = errors.New("hub: the result is larger than the caller can take")

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
// go on unaware. A broker that knows the topics of the events lost calls
// [BrokerHandle.MissedTopics] instead, which closes nobody.
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

// LocalUserPeers returns how this hub's peers whose user is user show in
// presence, with their node.
func (b *BrokerHandle) LocalUserPeers(user string) []PeerInfo { return b.h.localUserPeers(user) }

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
