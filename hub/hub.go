package hub

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/switchboard-rpc/switchboard/peer"
)

// ErrInvalidTopic is returned for a topic or pattern that breaks the topic
// syntax (see the package documentation).
var ErrInvalidTopic = errors.New("hub: invalid topic")

// Options configures a Hub. A nil *Options is valid and gives the defaults.
type Options struct {
	// Policy decides who may subscribe to and publish on which topic.
	// Nil means [DefaultPolicy]: any peer may subscribe, no peer may
	// publish (Go code publishing with Hub.Publish is not asked).
	Policy Policy

	// MaxSubscriptions caps the patterns one peer may be subscribed to.
	// Default [DefaultMaxSubscriptions]; an rpc.subscribe that would go
	// over it fails with -32004 and subscribes to nothing.
	MaxSubscriptions int

	// MaxTopicLength caps the length of a topic or pattern, in bytes.
	// Default [DefaultMaxTopicLength]; a longer one is refused with
	// -32602 (and with ErrInvalidTopic from Go).
	MaxTopicLength int

	// ForwardTimeout bounds a call forwarded to a peer that provides its
	// method. Default [DefaultForwardTimeout]; when it passes, the caller
	// gets -32003 and the provider rpc.cancel. Negative means no bound.
	ForwardTimeout time.Duration

	// MaxMessage caps the size of the replies the hub makes whose size
	// its peers choose (rpc.history, and rpc.call to a user or a topic,
	// whose answers are gathered within it), in bytes: set it to the
	// server's message size limit, so that no reply is one the other
	// side cannot read. Default [peer.DefaultMaxMessage].
	MaxMessage int

	// MaxForwards caps the forwarded calls in flight to one provider.
	// Default [DefaultMaxForwards]; a call that finds every provider of its
	// method at the cap waits for one (up to ForwardTimeout, then -32003),
	// as calls of the hub's own methods wait for a slot.
	MaxForwards int

	// MaxAddressed caps the peers one rpc.call to a user or a topic
	// reaches. Default [DefaultMaxAddressed]; a call that would reach
	// more gets -32004 and reaches none.
	MaxAddressed int

	// History bounds the events the in-memory store keeps, per topic and
	// in all, for rpc.history and for subscriptions that resume from a
	// position. The zero value keeps each topic's last 1000 events of the
	// last 10 minutes, 64 MiB in all. Ignored when Store is set.
	History History

	// Store is the hub's event stream: it numbers events and keeps their
	// history. Nil means NewMemoryStore(&History).
	Store Store

	// Broker links the hub to the other hubs of a cluster (see
	// hub/natsbroker); New hands it the hub's [BrokerHandle]. Nil: the
	// hub is alone. With a [Sequencer], Store must be nil or a
	// *MemoryStore; the epoch is the Sequencer's.
	Broker Broker

	// OnJoin and OnLeave, if set, are called when a peer joins and after
	// it has left, on the goroutine of Hub.Join and Hub.Leave (in a
	// server, the connection's). OnJoin runs before the connection is
	// served, so it must not wait for the peer: to call it, start a
	// goroutine. By OnLeave the connection is closed.
	OnJoin, OnLeave func(*Peer)

	// OnRefused, if set, is called once for each request of a peer that
	// the Policy refused (the peer got -32001, or the code of the
	// Policy's *peer.Error), or that went over MaxSubscriptions or
	// MaxAddressed (-32004), with the request's context. It is not called
	// for what Peer.Reauthorize takes back (that is its result). Like the
	// Policy, it may run on the peer's reader: it must not block. An audit
	// log hooks here (see server.Audit).
	OnRefused func(ctx context.Context, r Refusal)

	// Calls, if set, returns the requests this node's server has served
	// so far (server/prom's Metrics.Calls counts them): the admin API
	// shows it with each node (admin.info), where the admin page reads
	// calls per second. Nil: shown as 0.
	Calls func() uint64
}

// The defaults of the Options limits.
const (
	DefaultMaxSubscriptions = 1000 // patterns per peer
	DefaultMaxTopicLength   = 256  // bytes
)

// Hub is a registry of connected peers and of their topic subscriptions.
// It starts no goroutines: the server serves each connection and tells the
// hub when a peer joins and leaves; the hub answers the topic methods on
// those connections and fans events out to them.
//
// All methods are safe for concurrent use.
type Hub struct {
	o Options

	pmu    sync.RWMutex
	peers  map[string]*Peer
	byConn map[*peer.Conn]*Peer

	// mu guards the subscription tree and every Peer's subs. Publishing
	// holds it while it hands the event to each subscriber, which never
	// blocks; so events reach all subscribers in one order.
	mu       sync.Mutex
	root     node
	nsubs    int     // subscriptions in the tree
	seq      uint64  // publish sequence, for deduplication
	match    []*node // scratch for Publish, reused under mu
	last     uint64  // the position of the latest event published
	watchers node    // the subscriptions that asked for presence changes

	watches map[string][]*watch // those of Watch, by topic; guarded by mu

	store Store
	seqr  Sequencer                 // Options.Broker, when it gives positions
	sq    sequenced                 // its waiters
	gap   uint64                    // events from other nodes may be missing after no position before this
	ep    atomic.Pointer[epochName] // the stream's epoch; replaced under mu (Restart)
	// replays shares the messages of the events being replayed (replay.go).
	replays replayFrames

	handlers struct {
		subscribe, unsubscribe, publish, history, presence peer.Handler
	}

	routes routes   // the methods peers provide (route.go)
	adm    adminHub // for the admin API (admin.go)

	stats struct {
		published, delivered, dropped, slow atomic.Uint64
		overSubs, overTopicLen              atomic.Uint64
	}
	streams streamStats
}

// New returns an empty Hub configured by opts.
func New(opts *Options) *Hub {
	h := &Hub{
		peers:  make(map[string]*Peer),
		byConn: make(map[*peer.Conn]*Peer),
	}
	h.adm.started = time.Now()
	if opts != nil {
		h.o = *opts
	}
	if h.o.Policy == nil {
		h.o.Policy = DefaultPolicy
	}
	if h.o.MaxSubscriptions <= 0 {
		h.o.MaxSubscriptions = DefaultMaxSubscriptions
	}
	if h.o.MaxTopicLength <= 0 {
		h.o.MaxTopicLength = DefaultMaxTopicLength
	}
	if h.o.MaxMessage <= 0 {
		h.o.MaxMessage = peer.DefaultMaxMessage
	}
	if h.o.ForwardTimeout == 0 {
		h.o.ForwardTimeout = DefaultForwardTimeout
	}
	if h.o.MaxForwards <= 0 {
		h.o.MaxForwards = DefaultMaxForwards
	}
	if h.o.MaxAddressed <= 0 {
		h.o.MaxAddressed = DefaultMaxAddressed
	}
	seqr, _ := h.o.Broker.(Sequencer)
	if h.o.Store == nil {
		s := NewMemoryStore(&h.o.History)
		if seqr != nil {
			s.epoch = seqr.Epoch()
		}
		h.o.Store = s
	}
	h.store = h.o.Store
	epoch := h.store.Epoch()
	if seqr != nil {
		if _, ok := h.store.(positionedStore); !ok {
			panic("hub: a Sequencer needs a Store that keeps events at its positions, such as MemoryStore")
		}
		h.seqr = seqr
		epoch = seqr.Epoch()
	}
	h.ep.Store(newEpochName(epoch))
	h.last = h.store.Last()
	h.handlers.history = peer.HandlerFunc(h.serveHistory)
	h.handlers.presence = peer.HandlerFunc(h.servePresence)
	h.handlers.subscribe = peer.HandlerFunc(h.serveSubscribe)
	h.handlers.unsubscribe = peer.HandlerFunc(h.serveUnsubscribe)
	h.handlers.publish = peer.HandlerFunc(h.servePublish)
	if h.o.Broker != nil {
		h.o.Broker.Register(&BrokerHandle{h})
	}
	return h
}

// Peer is a connection registered with a Hub: a browser or a service.
// Its methods are safe for concurrent use.
type Peer struct {
	id       string
	identity any
	conn     *peer.Conn
	h        *Hub

	// Guarded by h.mu.
	subs  map[string]*subscription
	watch map[string]*subscription // those that get presence changes, in h.watchers
	mark  uint64                   // the last publish that reached this peer
	left  bool
	rs    replayState

	prov provision // the methods it provides (route.go)
	auth reauth    // for Reauthorize (revoke.go)
	adm  adminPeer // for the admin API (admin.go)
}

// ID returns the peer's id, unique in the hub (a UUID unless the server
// chose otherwise).
func (p *Peer) ID() string { return p.id }

// Identity returns what authentication said the peer is (nil when the
// server authenticates no one).
func (p *Peer) Identity() any { return p.identity }

// Conn returns the peer's connection: Conn().Call calls a method on the
// peer, Conn().Notify sends it a notification.
func (p *Peer) Conn() *peer.Conn { return p.conn }

// Topics returns the patterns the peer is subscribed to, sorted.
func (p *Peer) Topics() []string {
	p.h.mu.Lock()
	topics := make([]string, 0, len(p.subs))
	for t := range p.subs {
		topics = append(topics, t)
	}
	p.h.mu.Unlock()
	sort.Strings(topics)
	return topics
}

// Subscribe subscribes the peer to the patterns, as rpc.subscribe would,
// without asking the hub's Policy: the server's Go code decides. It returns
// an error wrapping ErrInvalidTopic for a bad pattern, a *peer.Error when
// the peer would exceed Options.MaxSubscriptions, and an error wrapping
// peer.ErrClosed after the peer left.
func (p *Peer) Subscribe(patterns ...string) error {
	for _, t := range patterns {
		if !validTopic(t, true, p.h.o.MaxTopicLength) {
			return fmt.Errorf("%w: %q", ErrInvalidTopic, t)
		}
	}
	return p.h.subscribe(p, patterns)
}

// Unsubscribe removes the peer's subscriptions to the patterns and returns
// those it had.
func (p *Peer) Unsubscribe(patterns ...string) []string {
	return p.h.unsubscribe(p, patterns)
}

// Join registers conn as a connected peer with the given identity and
// returns it. The peer's id is id, or a new UUID when id is ""; Join
// panics if a joined peer has that id already. A server calls Join before
// it serves conn (serving it with a context from [WithIdentity], so that
// the Policy sees the identity) and Leave once Serve has returned.
func (h *Hub) Join(conn *peer.Conn, id string, identity any) *Peer {
	if id == "" {
		id = uuid.NewString()
	}
	p := &Peer{id: id, identity: identity, conn: conn, h: h}
	p.adm.since = time.Now()
	h.pmu.Lock()
	if _, dup := h.peers[id]; dup {
		h.pmu.Unlock()
		panic("hub: peer id " + id + " joined twice")
	}
	h.peers[id] = p
	h.byConn[conn] = p
	h.pmu.Unlock()
	h.userChanged(true, p)
	if h.o.OnJoin != nil {
		h.o.OnJoin(p)
	}
	return p
}

// Leave removes p from the hub and drops its subscriptions. It does not
// close p's connection.
func (h *Hub) Leave(p *Peer) {
	h.mu.Lock()
	if p.left {
		h.mu.Unlock()
		return
	}
	p.left = true
	p.endReplay()
	for t := range p.watch {
		h.unwatchLocked(p, t)
	}
	gone := make([]string, 0, len(p.subs))
	for t, s := range p.subs {
		s.remove()
		gone = append(gone, t)
	}
	h.nsubs -= len(p.subs)
	p.subs = nil
	h.presenceChanged(p, "rpc.leave", gone...)
	h.mu.Unlock()
	h.unprovideAll(p)
	p.rs.wg.Wait()

	h.pmu.Lock()
	delete(h.peers, p.id)
	delete(h.byConn, p.conn)
	h.pmu.Unlock()
	h.userChanged(false, p)
	if h.o.OnLeave != nil {
		h.o.OnLeave(p)
	}
}

// Peer returns the peer with the given id, or nil.
func (h *Hub) Peer(id string) *Peer {
	h.pmu.RLock()
	defer h.pmu.RUnlock()
	return h.peers[id]
}

// Peers returns the peers connected now, in no particular order.
func (h *Hub) Peers() []*Peer {
	h.pmu.RLock()
	defer h.pmu.RUnlock()
	peers := make([]*Peer, 0, len(h.peers))
	for _, p := range h.peers {
		peers = append(peers, p)
	}
	return peers
}

// PeerFromContext returns the peer whose request a handler is serving,
// or nil (over HTTP POST, or for a connection that did not join this hub).
func (h *Hub) PeerFromContext(ctx context.Context) *Peer {
	c := peer.ConnFromContext(ctx)
	if c == nil {
		return nil
	}
	h.pmu.RLock()
	defer h.pmu.RUnlock()
	return h.byConn[c]
}

// Stats are counters of a hub's activity since it was created.
type Stats struct {
	Peers         int    // connected now
	Subscriptions int    // subscriptions now, over all peers
	Published     uint64 // messages published (by peers and by Go code)
	Delivered     uint64 // events handed to a subscriber's queue
	Dropped       uint64 // events not delivered: the subscriber was closed or too slow
	SlowClosed    uint64 // subscribers closed because their queue was full (1008)

	OverSubscriptions uint64 // subscribes refused: over MaxSubscriptions (-32004)
	OverTopicLength   uint64 // topic requests refused: longer than MaxTopicLength (-32602)

	Routes  RouteStats   // calls forwarded to the peers that provide methods
	Stream  StreamStats  // the event stream: history, recoveries
	Cluster ClusterStats // the node's name and its Broker's counters
}

// Stats returns the hub's counters.
func (h *Hub) Stats() Stats {
	h.pmu.RLock()
	n := len(h.peers)
	h.pmu.RUnlock()
	h.mu.Lock()
	subs := h.nsubs
	h.mu.Unlock()
	return Stats{
		Peers:         n,
		Subscriptions: subs,
		Published:     h.stats.published.Load(),
		Delivered:     h.stats.delivered.Load(),
		Dropped:       h.stats.dropped.Load(),
		SlowClosed:    h.stats.slow.Load(),

		OverSubscriptions: h.stats.overSubs.Load(),
		OverTopicLength:   h.stats.overTopicLen.Load(),
		Routes:            h.routeStats(),
		Stream:            h.streamStats(),
		Cluster:           h.clusterStats(),
	}
}
