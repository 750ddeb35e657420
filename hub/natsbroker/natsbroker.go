// Package natsbroker links the hubs of a Switchboard cluster over NATS: an
// event published on any node reaches the subscribers of every node.
//
//	b, err := natsbroker.Connect(ctx, &natsbroker.Options{URLs: "nats://a:4222,nats://b:4222"})
//	...
//	h := hub.New(&hub.Options{Broker: b.HubBroker()}) // registers h with b
//	if err := b.Start(ctx); err != nil { ... }
//	defer b.Close()
//
// Without JetStream, each node delivers the events published on it to its
// own subscribers and sends them on core NATS (subject
// "<prefix>.ev.<node>.<run>.<number>.<topic>"); every node receives the
// others' and delivers them, numbered by its own store. NATS keeps the
// order of one connection's messages, so events reach every node in the
// order of their node of origin; a node gives its positions and epoch to
// the events it delivers, and a subscriber that resumes on another node
// starts a new epoch there. While NATS is unreachable, each node
// delivers its own events only; those are not sent later. Each node
// numbers the events it sends, so the others notice those they missed
// (relay.go), learn their topics from it (gap.go) and tell the
// subscribers of those topics with an rpc.missed notification: they
// resume on the same connection, and learn they missed events.
//
// With JetStream (Options.JetStream), publishing appends the event to a
// stream (subject "<prefix>.js.<topic>") and every node, the publishing
// one too, delivers what it reads back from the stream, with the stream
// sequence as the event's position and the stream (its name and creation
// time) as the epoch: every node has the same positions, and a subscriber
// can resume on any node. Publishing fails while the stream is
// unreachable.
//
// Topics map to NATS subjects one to one: the topic syntax (words of
// letters, digits, '_', '-' and ':', separated by dots) is a subset of a
// subject's. Anything else, such as a NATS wildcard, is escaped.
//
// docs/cluster.md describes the guarantees and their limits.
package natsbroker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/internal/redact"
	"go.uber.org/zap"
)

// Options configures a Broker. A nil *Options connects to
// nats://127.0.0.1:4222 without JetStream.
type Options struct {
	// URLs are the NATS servers, comma-separated. Default nats.DefaultURL.
	URLs string

	// Node names this hub in the cluster: one word of letters, digits,
	// '_' and '-'. Default: 8 random hex digits.
	Node string

	// Prefix begins every subject the cluster uses. Default "switchboard".
	Prefix string

	// JetStream gives events positions, history and recovery that span
	// the cluster, from a JetStream stream (see the package doc).
	JetStream bool

	// Stream names the JetStream stream. Default "SWITCHBOARD".
	Stream string

	// Retention bounds the stream: its events per topic, age and bytes
	// (all topics together). Zero fields take the hub's defaults;
	// negative ones lift the bound. Memory keeps the stream in the NATS
	// server's memory rather than on its disk.
	Retention hub.Retention
	MaxBytes  int64
	Memory    bool

	// Replicas is how many NATS servers keep the stream. Default: 3 when
	// the server connected to is one of a NATS cluster of three or more
	// (it knows of them), so that the stream outlives any one server; 1
	// otherwise. An existing stream is updated to it.
	Replicas int

	// StreamCheck is how often the node checks that the stream it reads
	// is still the one it started reading (not deleted and created again,
	// as when a NATS server loses its store): see [Broker.Ready] and the
	// package doc. The node also checks it each time the link is
	// restored and whenever reading the stream fails. Default
	// [DefaultStreamCheck].
	StreamCheck time.Duration

	// NATS are more options for the NATS connection: credentials (such as
	// nats.UserCredentials, nats.NkeyOptionFromSeed) and TLS (nats.RootCAs,
	// nats.ClientCert). They apply after the broker's own.
	NATS []nats.Option

	// Heartbeat is how often the node tells the others about its peers
	// (the methods they provide); a node not heard from for three
	// heartbeats is taken for gone, and calls in flight to it end with
	// -32006. Default [DefaultHeartbeat].
	Heartbeat time.Duration

	// Logger logs the link's transitions (lost, restored). Default: none.
	Logger *zap.Logger
}

// Broker links a hub to the others over one NATS connection. Its methods
// are safe for concurrent use.
type Broker struct {
	nc     *nats.Conn
	node   string
	prefix string
	run    string // a random word naming this Broker's run: its events' numbers start again with it
	evPub  string // "<prefix>.ev.<node>.<run>.", the subject of this node's events before their number (relay.go)
	evSub  string // "<prefix>.ev.", before the node
	log    *zap.Logger

	jetStream bool // set before connecting: the callbacks read it
	js        jetstream.JetStream
	stream    string
	st        streamState // stream.go

	mu      sync.Mutex
	h       *hub.BrokerHandle // given by hub.New (Register)
	started bool
	sub     *nats.Subscription
	gapSubs []*nats.Subscription // questions about gaps, and for marks (gap.go)
	cons    jetstream.ConsumeContext

	heartbeat time.Duration
	dir       atomic.Pointer[directory] // set by Start (route.go)

	connected atomic.Bool
	closing   atomic.Bool // Close was called: the link going down is no news
	stats     struct{ sent, received, unsent, lost, disconnects, resets atomic.Uint64 }
	rl        relayState // relay.go
}

// randomHex returns 8 random hex digits.
func randomHex() string {
	var r [4]byte
	_, _ = rand.Read(r[:])
	return hex.EncodeToString(r[:])
}

// Connect connects to NATS and, with JetStream, creates or updates the
// stream (which it needs: then it fails when NATS cannot be reached before
// ctx ends). Without JetStream, a node may start while NATS is down: it
// delivers its own events until NATS is reachable.
func Connect(ctx context.Context, o *Options) (*Broker, error) {
	var opts Options
	if o != nil {
		opts = *o
	}
	if opts.URLs == "" {
		opts.URLs = nats.DefaultURL
	}
	if opts.Prefix == "" {
		opts.Prefix = "switchboard"
	}
	if opts.Stream == "" {
		opts.Stream = "SWITCHBOARD"
	}
	if opts.Node == "" {
		opts.Node = randomHex()
	}
	if !validNode(opts.Node) {
		return nil, fmt.Errorf("natsbroker: node name %q: want letters, digits, '_' and '-'", opts.Node)
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	run := randomHex()
	b := &Broker{
		node:   opts.Node,
		prefix: opts.Prefix,
		run:    run,
		evPub:  opts.Prefix + ".ev." + opts.Node + "." + run + ".",
		evSub:  opts.Prefix + ".ev.",
		log:    opts.Logger.With(zap.String("node", opts.Node)),
		stream: opts.Stream,

		jetStream: opts.JetStream,
	}
	b.st.kick = make(chan struct{}, 1)
	b.rl.remark = make(chan struct{}, 1)
	b.st.ctx, b.st.stop = context.WithCancel(context.Background())
	b.heartbeat = opts.Heartbeat
	if b.heartbeat <= 0 {
		b.heartbeat = DefaultHeartbeat
	}
	nopts := []nats.Option{
		nats.Name("switchboard hub " + opts.Node),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.RetryOnFailedConnect(true),
		// While NATS is unreachable, events stay on their node rather
		// than reach the others late.
		nats.ReconnectBufSize(-1),
		nats.ConnectHandler(func(c *nats.Conn) { b.up(c, "cluster link up") }),
		nats.ReconnectHandler(func(c *nats.Conn) { b.up(c, "cluster link restored") }),
		nats.DisconnectErrHandler(b.down),
		nats.ErrorHandler(b.asyncError),
	}
	nc, err := nats.Connect(opts.URLs, append(nopts, opts.NATS...)...)
	if err != nil {
		return nil, fmt.Errorf("natsbroker: connect to %s: %w", redact.Text(opts.URLs), err)
	}
	b.nc = nc
	if nc.IsConnected() {
		b.up(nc, "cluster link up")
	}
	if opts.JetStream {
		if err := b.openStream(ctx, &opts); err != nil {
			nc.Close()
			return nil, err
		}
	}
	return b, nil
}

// Register implements hub.Broker: hub.New hands b the handle of the hub
// it links. A Broker links one hub; registering a second panics.
func (b *Broker) Register(h *hub.BrokerHandle) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.h != nil {
		panic("natsbroker: a Broker links one hub")
	}
	b.h = h
}

// Start hands the hub the events of the other nodes: it subscribes to
// them (or, with JetStream, reads the stream) and delivers each through
// the hub's handle. With JetStream, it returns once the hub has read the
// stream up to where it ended when Start began, so that the hub serves
// its clients with its history in place; it fails when ctx ends first.
// The hub must have been made, with b.HubBroker() as its Options.Broker,
// before.
func (b *Broker) Start(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.h == nil:
		return errors.New("natsbroker: no hub: make one with b.HubBroker() as its Options.Broker first")
	case b.started:
		return errors.New("natsbroker: started twice")
	}
	b.started = true
	if err := b.startDirectory(b.h); err != nil {
		return fmt.Errorf("natsbroker: %w", err)
	}
	if b.js == nil {
		sub, err := b.nc.Subscribe(b.evSub+">", b.receive)
		if err != nil {
			return fmt.Errorf("natsbroker: subscribe: %w", err)
		}
		// A hub keeps up with far more than NATS sends it; what a burst
		// leaves pending must not be dropped for a lower default.
		_ = sub.SetPendingLimits(1<<20, 1<<30)
		b.sub = sub
		for subject, fn := range map[string]nats.MsgHandler{
			b.Subject("gap", b.node): b.answerGap,
			b.Subject("marks"):       func(*nats.Msg) { b.remark() },
		} {
			s, err := b.nc.Subscribe(subject, fn)
			if err != nil {
				return fmt.Errorf("natsbroker: subscribe: %w", err)
			}
			b.gapSubs = append(b.gapSubs, s)
		}
		// Once the server has the subscription, this node misses nothing
		// published after Start; while NATS is down, it has it when the
		// link is restored.
		if b.nc.IsConnected() {
			_ = b.nc.FlushWithContext(ctx)
		}
		return nil
	}
	return b.startStream(ctx)
}

// deliver hands an event to the hub, at seq when it is not 0.
func (b *Broker) deliver(seq uint64, subjectTopic string, data []byte) {
	topic, ok := decodeTopic(subjectTopic)
	if !ok || !json.Valid(data) {
		b.stats.lost.Add(1)
		b.log.Warn("cluster event dropped: not a topic and JSON data", zap.String("subject_topic", subjectTopic))
		return
	}
	b.stats.received.Add(1)
	if seq == 0 {
		b.h.Deliver(topic, data)
		return
	}
	if _, err := b.h.DeliverAt(seq, topic, data); err != nil {
		b.log.Warn("cluster stream event dropped", zap.Error(err))
	}
}

// HubBroker returns what to set as hub.Options.Broker: b itself, or with
// JetStream, a hub.Sequencer over b's stream.
func (b *Broker) HubBroker() hub.Broker {
	if b.js != nil {
		return sequencer{b}
	}
	return b
}

// Node returns the node's name. It implements hub.Broker.
func (b *Broker) Node() string { return b.node }

// Conn returns the NATS connection, for other traffic between the nodes
// (use subjects under Subject, not under "<prefix>.ev" or "<prefix>.js").
func (b *Broker) Conn() *nats.Conn { return b.nc }

// Subject returns the cluster's subject made of words, under its prefix:
// Subject("route", "x") is "switchboard.route.x".
func (b *Broker) Subject(words ...string) string {
	return b.prefix + "." + strings.Join(words, ".")
}

// Stats implements hub.Broker.
func (b *Broker) Stats() hub.BrokerStats {
	return hub.BrokerStats{
		Connected:   b.connected.Load() && b.st.err.Load() == nil,
		Sent:        b.stats.sent.Load(),
		Received:    b.stats.received.Load(),
		Unsent:      b.stats.unsent.Load(),
		Lost:        b.stats.lost.Load(),
		Disconnects: b.stats.disconnects.Load(),
		Resets:      b.stats.resets.Load(),
	}
}

// Close stops reading events and closes the connection.
func (b *Broker) Close() error {
	if !b.closing.CompareAndSwap(false, true) {
		return nil // closed already
	}
	if d := b.dir.Load(); d != nil {
		d.close()
	}
	b.stopWatch()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopConsumer()
	if b.sub != nil {
		_ = b.sub.Unsubscribe()
	}
	for _, s := range b.gapSubs {
		_ = s.Unsubscribe()
	}
	b.nc.Close() // which also ends the consumers' Stop sooner
	b.st.stopping.Wait()
	return nil
}

// Ready returns nil when the node can serve as a node of its cluster:
// linked to NATS and, with JetStream, the stream available and read up to
// where it ended when the node started reading it (or read it again).
// Otherwise, an error says why: a node not ready is best left out of a
// load balancer's rotation.
func (b *Broker) Ready() error {
	if !b.connected.Load() {
		return errors.New("NATS link down")
	}
	if !b.jetStream {
		return nil
	}
	if err := b.st.err.Load(); err != nil {
		return fmt.Errorf("cluster stream unavailable: %w", *err)
	}
	if !b.st.caught.Load() || b.st.stale.Load() {
		return errors.New("reading the cluster stream")
	}
	return nil
}

// up and down log the link's transitions, once each.
func (b *Broker) up(nc *nats.Conn, msg string) {
	if b.connected.CompareAndSwap(false, true) {
		b.log.Info(msg, zap.String("url", redact.URL(nc.ConnectedUrl())))
		b.interrupted()
		if !b.jetStream {
			// Find the gaps of this outage now, on both sides.
			b.remark()
			b.askMarks(nc)
		}
		if b.jetStream {
			// The stream may be another one now: check it before
			// delivering what the consumer reads next, and at once.
			b.st.verify.Store(true)
			b.recheck()
		}
	}
}

func (b *Broker) down(_ *nats.Conn, err error) {
	if b.connected.CompareAndSwap(true, false) && !b.closing.Load() {
		b.stats.disconnects.Add(1)
		if b.jetStream {
			// Every event goes through the stream: none is published or
			// delivered until the link is back.
			b.log.Warn("cluster link lost: publishing refused until it is back", zap.Error(err))
		} else {
			b.log.Warn("cluster link lost: delivering this node's events only", zap.Error(err))
		}
		b.interrupted()
	}
}

// asyncError logs what NATS reports out of band: a subscription too slow
// for its events loses some.
func (b *Broker) asyncError(_ *nats.Conn, _ *nats.Subscription, err error) {
	if errors.Is(err, nats.ErrSlowConsumer) {
		b.stats.lost.Add(1)
		b.interrupted()
	}
	b.log.Warn("cluster link error", zap.Error(err))
}

// interrupted tells the hub that events of other nodes may be missing.
// With JetStream nothing is: the stream has them, in order.
func (b *Broker) interrupted() {
	if b.jetStream {
		return
	}
	b.mu.Lock()
	h, started := b.h, b.started
	b.mu.Unlock()
	if started {
		h.Interrupted()
	}
}

// validNode reports whether a node name is one subject word of letters,
// digits, '_' and '-'.
func validNode(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !plainByte(s[i]) || s[i] == ':' {
			return false
		}
	}
	return true
}
