package natsbroker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/internal/redact"
	"go.uber.org/zap"
)

// This file reads the JetStream stream and watches that it stays the one
// the node reads. A stream deleted and created again (a NATS server that
// lost its store, an operator's mistake) starts again at position 1
// under the same name; a reader that went on as if nothing happened
// would give the new stream's events the old epoch, skip those below
// the last position it read, and acknowledge publishes with positions
// that mean something else on every other node. So the node checks the
// stream's identity, its name and creation time (the epoch), each time
// the link is restored, whenever reading the stream fails, whenever a
// publish is given a position it has already read, and every
// Options.StreamCheck. Until the check is done, it delivers nothing of
// what it reads. When the stream is another one, the node logs it at
// error level, counts it (Stats().Resets), and adopts the new epoch as a
// restarted hub would: hub.BrokerHandle.Restart forgets the history and
// closes the subscribers' connections, whose clients resume and are told
// they missed events; then the node reads the new stream from its start.

// DefaultStreamCheck is the default of Options.StreamCheck.
const DefaultStreamCheck = 2 * time.Second

// streamCheckTimeout bounds one check of the stream's identity.
const streamCheckTimeout = 5 * time.Second

// missingWait is how long the stream must have been gone before a node
// creates it again.
const missingWait = time.Second

// streamState is the state of reading the stream. The fields the message
// handler uses without a lock are read by it alone while the consumer
// runs, and set by the watcher only while it is stopped.
type streamState struct {
	cfg      jetstream.StreamConfig
	interval time.Duration

	epoch    atomic.Pointer[string] // the stream read: its name and creation time
	read     atomic.Uint64          // the position of the latest event read from it
	head     uint64                 // its last position when reading began
	caught   atomic.Bool            // head was delivered
	caughtUp chan struct{}          // closed once head was first delivered (Start waits)
	verify   atomic.Bool            // check the stream before delivering the next event
	stale    atomic.Bool            // the stream may not be the one read: deliver nothing until read again
	err      atomic.Pointer[error]  // why the stream is unavailable, or nil

	// Each consumer's handler delivers only while its generation is the
	// current one; a consumer replaced is stopped in the background
	// (stopping), since its Stop can wait for seconds on a stream that
	// does not answer. deliverMu is held while an event is delivered, so
	// that once the generation changed and it was taken, no event of the
	// old consumer reaches the hub.
	gen       atomic.Uint64
	deliverMu sync.Mutex
	stopping  sync.WaitGroup

	missing atomic.Int64 // when the stream was first found gone (Unix ns), or 0

	kick chan struct{}   // 1-buffered: check now
	ctx  context.Context // cancelled by Close: a check under way ends
	stop context.CancelFunc
	wg   sync.WaitGroup
}

// openStream waits for the connection and creates or updates the stream.
func (b *Broker) openStream(ctx context.Context, o *Options) error {
	js, err := jetstream.New(b.nc)
	if err != nil {
		return fmt.Errorf("natsbroker: %w", err)
	}
	r := o.Retention
	cfg := jetstream.StreamConfig{
		Name:              o.Stream,
		Subjects:          []string{o.Prefix + ".js.>"},
		Discard:           jetstream.DiscardOld,
		MaxMsgsPerSubject: limit(int64(r.Events), hub.DefaultHistoryEvents),
		MaxAge:            time.Duration(limit(int64(r.Age), int64(hub.DefaultHistoryAge))),
		MaxBytes:          limit(o.MaxBytes, hub.DefaultHistoryTotal),
		MaxMsgSize:        -1,
		Storage:           jetstream.FileStorage,
		Replicas:          o.Replicas,
	}
	if cfg.MaxAge < 0 {
		cfg.MaxAge = 0 // no bound
	}
	if o.Memory {
		cfg.Storage = jetstream.MemoryStorage
	}
	b.js = js
	b.st.interval = o.StreamCheck
	if b.st.interval <= 0 {
		b.st.interval = DefaultStreamCheck
	}
	for {
		// Each attempt has its own bound: a request the servers drop (a
		// JetStream cluster electing its leader) gets no answer at all.
		actx, cancel := context.WithTimeout(ctx, streamCheckTimeout)
		var old *jetstream.StreamConfig // the stream's, if it exists
		if s, err := js.Stream(actx, cfg.Name); err == nil {
			old = &s.CachedInfo().Config
		}
		if o.Replicas == 0 {
			cfg.Replicas = b.defaultReplicas(old)
		}
		var s jetstream.Stream
		s, err = js.CreateOrUpdateStream(actx, cfg)
		cancel()
		if err == nil {
			if old != nil {
				b.boundsChanged(*old, cfg)
			}
			b.st.cfg = cfg
			epoch := epochOf(s.CachedInfo())
			b.st.epoch.Store(&epoch)
			return nil
		}
		// Not connected yet, or JetStream not ready: try again until ctx ends.
		t := time.NewTimer(250 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			if !b.nc.IsConnected() {
				return fmt.Errorf("natsbroker: NATS unreachable at %s: %w", redact.Text(o.URLs), ctx.Err())
			}
			return fmt.Errorf("natsbroker: open stream %s: %w", o.Stream, err)
		case <-t.C:
		}
	}
}

// defaultReplicas returns the replicas the stream takes when Options do
// not say: those it has already when it exists (old; an update does not
// lower them), else 3 on a NATS cluster of three servers or more, else 1.
func (b *Broker) defaultReplicas(old *jetstream.StreamConfig) int {
	n := 1
	if b.nc.ConnectedClusterName() != "" && len(b.nc.Servers()) >= 3 {
		n = 3
	}
	if old != nil {
		n = max(n, old.Replicas)
	}
	return n
}

// boundsChanged warns when this node's options have just changed the
// bounds of a stream that other nodes may share: the last node to start
// sets them for all, so nodes started with different history flags undo
// each other's.
func (b *Broker) boundsChanged(old, cfg jetstream.StreamConfig) {
	if old.MaxMsgsPerSubject == cfg.MaxMsgsPerSubject && old.MaxAge == cfg.MaxAge &&
		old.MaxBytes == cfg.MaxBytes && old.Replicas == cfg.Replicas {
		return
	}
	b.log.Warn("cluster stream bounds changed by this node: every node should have the same history flags",
		zap.String("stream", cfg.Name),
		zap.Int64("events_per_topic_was", old.MaxMsgsPerSubject), zap.Int64("events_per_topic", cfg.MaxMsgsPerSubject),
		zap.Duration("age_was", old.MaxAge), zap.Duration("age", cfg.MaxAge),
		zap.Int64("bytes_was", old.MaxBytes), zap.Int64("bytes", cfg.MaxBytes),
		zap.Int("replicas_was", old.Replicas), zap.Int("replicas", cfg.Replicas))
}

// epochOf names a stream: its name and creation time.
func epochOf(info *jetstream.StreamInfo) string {
	return fmt.Sprintf("%s-%x", info.Config.Name, info.Created.UnixNano())
}

// limit turns a Retention field into a JetStream limit: 0 takes def,
// negative means none (-1).
func limit(v, def int64) int64 {
	switch {
	case v == 0:
		return def
	case v < 0:
		return -1
	}
	return v
}

// startStream reads the stream from its start and returns once the hub
// has it up to where it ended, then watches it. b.mu held.
func (b *Broker) startStream(ctx context.Context) error {
	b.st.caughtUp = make(chan struct{})
	if err := b.readStream(ctx, 0); err != nil {
		return err
	}
	select {
	case <-b.st.caughtUp:
	case <-ctx.Done():
		return fmt.Errorf("natsbroker: read stream %s up to %d: %w", b.stream, b.st.head, ctx.Err())
	}
	b.st.wg.Go(b.watch)
	return nil
}

// readStream starts reading the stream after position after (0: from
// its start), which the hub has. The consumer must be stopped; b.mu held.
func (b *Broker) readStream(ctx context.Context, after uint64) error {
	s, err := b.js.Stream(ctx, b.stream)
	if err != nil {
		return fmt.Errorf("natsbroker: stream %s: %w", b.stream, err)
	}
	// The stream's last event now: once it is delivered, the hub has the
	// history, and what follows is live.
	state := s.CachedInfo().State
	b.st.head = state.LastSeq
	read := after
	if state.Msgs == 0 {
		read = max(read, state.LastSeq) // an empty stream goes on after its last position
	}
	b.st.read.Store(read)
	b.st.caught.Store(state.Msgs == 0 || after >= state.LastSeq)
	if b.st.caught.Load() {
		b.caughtUpOnce()
	}
	cfg := jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy}
	if after > 0 {
		cfg = jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: after + 1}
	}
	cons, err := b.js.OrderedConsumer(ctx, b.stream, cfg)
	if err != nil {
		return fmt.Errorf("natsbroker: read stream %s: %w", b.stream, err)
	}
	gen := b.st.gen.Add(1)
	cc, err := cons.Consume(func(m jetstream.Msg) { b.receiveStream(gen, m) }, jetstream.ConsumeErrHandler(b.consumeError))
	if err != nil {
		return fmt.Errorf("natsbroker: read stream %s: %w", b.stream, err)
	}
	b.cons = cc
	b.st.stale.Store(false)
	return nil
}

// caughtUpOnce closes caughtUp, once.
func (b *Broker) caughtUpOnce() {
	select {
	case <-b.st.caughtUp:
	default:
		close(b.st.caughtUp)
	}
}

// receiveStream delivers an event read back from the stream by the
// consumer of generation gen. It runs for one message at a time.
func (b *Broker) receiveStream(gen uint64, m jetstream.Msg) {
	b.st.deliverMu.Lock()
	defer b.st.deliverMu.Unlock()
	if gen != b.st.gen.Load() || b.st.stale.Load() {
		return // a consumer replaced, or one to be: read again once checked
	}
	meta, err := m.Metadata()
	if err != nil {
		b.log.Warn("cluster stream message without metadata", zap.Error(err))
		return
	}
	topic, ok := strings.CutPrefix(m.Subject(), b.prefix+".js.")
	if !ok {
		return
	}
	seq := meta.Sequence.Stream
	read := b.st.read.Load()
	if (b.st.verify.Load() && b.st.verify.Swap(false)) || (b.st.caught.Load() && seq > read+1) {
		// Reading resumed, or skipped positions: is it still the stream?
		ctx, cancel := context.WithTimeout(b.st.ctx, streamCheckTimeout)
		epoch, err := b.streamEpoch(ctx)
		cancel()
		if err != nil || epoch != *b.st.epoch.Load() {
			b.st.stale.Store(true)
			b.recheck()
			return
		}
	}
	if b.st.caught.Load() && seq > read+1 {
		// Every event of the stream is this node's to deliver: past the
		// start, a gap is events the stream dropped before this node read
		// them (it fell further behind than the stream's bounds).
		b.stats.lost.Add(seq - read - 1)
		b.log.Warn("cluster stream events dropped before this node read them", zap.Uint64("after", read), zap.Uint64("next", seq))
	}
	b.st.read.Store(seq)
	b.deliver(seq, topic, m.Data())
	if !b.st.caught.Load() && seq >= b.st.head {
		b.st.caught.Store(true)
		b.caughtUpOnce()
	}
}

// consumeError hears of the consumer's troubles (the stream's consumer
// deleted, heartbeats missed): the consumer reads again by itself, from
// after the last position it read, and the stream it finds must be
// checked first. It runs with the consumer's lock held: it must not wait.
func (b *Broker) consumeError(_ jetstream.ConsumeContext, err error) {
	b.log.Debug("cluster stream read interrupted", zap.Error(err))
	b.st.verify.Store(true)
	b.recheck()
}

// recheckLater asks the watcher to check the stream once missingWait has
// passed, unless Close comes first. The watcher alone calls it.
func (b *Broker) recheckLater() {
	b.st.wg.Go(func() {
		t := time.NewTimer(missingWait)
		defer t.Stop()
		select {
		case <-t.C:
			b.recheck()
		case <-b.st.ctx.Done():
		}
	})
}

// recheck asks the watcher to check the stream now.
func (b *Broker) recheck() {
	if !b.jetStream {
		return
	}
	select {
	case b.st.kick <- struct{}{}:
	default:
	}
}

// streamEpoch returns the epoch of the stream as it is now, creating it
// again when it has been gone for missingWait (the node needs it to
// publish). Created at once, it could meet the NATS server still
// deleting the old one, which then left a stream that answered nothing.
func (b *Broker) streamEpoch(ctx context.Context) (string, error) {
	s, err := b.js.Stream(ctx, b.stream)
	if !errors.Is(err, jetstream.ErrStreamNotFound) {
		b.st.missing.Store(0)
	} else if since := b.st.missing.Load(); since == 0 {
		b.st.missing.CompareAndSwap(0, time.Now().UnixNano())
	} else if time.Since(time.Unix(0, since)) >= missingWait {
		s, err = b.js.CreateStream(ctx, b.st.cfg)
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			s, err = b.js.Stream(ctx, b.stream) // another node was quicker
		}
	}
	if err != nil {
		return "", err
	}
	return epochOf(s.CachedInfo()), nil
}

// watch checks the stream every interval and when asked, until Close.
func (b *Broker) watch() {
	t := time.NewTicker(b.st.interval)
	defer t.Stop()
	for {
		select {
		case <-b.st.ctx.Done():
			return
		case <-t.C:
		case <-b.st.kick:
		}
		if b.st.ctx.Err() != nil {
			return // select chose another case, also ready
		}
		b.check()
	}
}

// check checks the stream's identity, adopts a new one, and reads the
// stream again when the handler stopped delivering it.
func (b *Broker) check() {
	ctx, cancel := context.WithTimeout(b.st.ctx, streamCheckTimeout)
	defer cancel()
	epoch, err := b.streamEpoch(ctx)
	if err != nil {
		if b.st.ctx.Err() != nil {
			return // closing
		}
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			// Whatever the consumer reads next is of another stream.
			b.st.stale.Store(true)
			b.recheckLater() // to create it
		}
		if b.st.err.Swap(&err) == nil {
			b.log.Warn("cluster stream unavailable: publishing fails", zap.String("stream", b.stream), zap.Error(err))
		}
		return
	}
	if b.st.err.Swap(nil) != nil {
		b.log.Info("cluster stream available", zap.String("stream", b.stream))
	}
	old := *b.st.epoch.Load()
	if epoch == old && !b.st.stale.Load() {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closing.Load() {
		return
	}
	b.st.stale.Store(true)
	b.stopConsumer()
	after := b.st.read.Load()
	if epoch != old {
		b.stats.resets.Add(1)
		b.log.Error("cluster stream replaced: adopting its epoch; this node's history is gone and its subscribers are told they missed events",
			zap.String("stream", b.stream), zap.String("old_epoch", old), zap.String("epoch", epoch))
		b.st.epoch.Store(&epoch)
		b.st.read.Store(0)
		b.h.Restart(epoch, "cluster stream replaced")
		after = 0
	}
	if err := b.readStream(ctx, after); err != nil {
		b.st.err.Store(&err)
		b.log.Warn("cluster stream unavailable: publishing fails", zap.String("stream", b.stream), zap.Error(err))
		b.recheck()
	}
}

// stopConsumer stops the consumer: at once, its handler delivers nothing
// more; in the background, it stops reading. b.mu held.
func (b *Broker) stopConsumer() {
	b.st.deliverMu.Lock() // after a delivery under way
	b.st.gen.Add(1)
	b.st.deliverMu.Unlock()
	if b.cons == nil {
		return
	}
	old := b.cons
	b.cons = nil
	b.st.stopping.Go(func() {
		old.Stop()
		<-old.Closed()
	})
}

// stopWatch stops the watcher, if it runs, and a check under way.
func (b *Broker) stopWatch() {
	b.st.stop()
	b.st.wg.Wait()
}
