package membroker

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/switchboard-rpc/switchboard/hub"
)

// Broker is one node's link to the cluster. Its methods are safe for
// concurrent use.
type Broker struct {
	c    *Cluster
	name string
	h    *hub.BrokerHandle // set by Register

	in   inbox
	done chan struct{} // closed by Close: the delivering goroutine ends
	wg   sync.WaitGroup

	// ctx ends with Close: the calls in flight to this node end with
	// -32006.
	ctx  context.Context
	stop context.CancelFunc

	closeOnce sync.Once
	closed    atomic.Bool

	stats struct{ sent, received, lost atomic.Uint64 }
}

var _ hub.Describer = (*Broker)(nil)

// sequencer is a Broker of a sequenced cluster.
type sequencer struct{ *Broker }

var _ hub.Sequencer = sequencer{}

// HubBroker returns what to set as hub.Options.Broker: b itself or, in a
// sequenced cluster, b as a [hub.Sequencer].
func (b *Broker) HubBroker() hub.Broker {
	if b.c.o.Sequenced {
		return sequencer{b}
	}
	return b
}

// Register implements hub.Broker: the node joins the cluster. It panics
// when b already links a hub, or was closed.
func (b *Broker) Register(h *hub.BrokerHandle) {
	c := b.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if b.h != nil || b.closed.Load() {
		panic("membroker: a Broker links one hub")
	}
	b.h = h
	c.nodes[b.name] = b
	b.wg.Go(b.deliverLoop)
}

// Node implements hub.Broker.
func (b *Broker) Node() string { return b.name }

// Forward implements hub.Broker: the event is queued for every other
// node.
func (b *Broker) Forward(topic string, data []byte) {
	for _, n := range b.c.others(b) {
		n.in.push(item{topic: topic, data: data}, b.c.o.Queue)
	}
	b.stats.sent.Add(1)
}

// Stats implements hub.Broker.
func (b *Broker) Stats() hub.BrokerStats {
	b.c.mu.RLock()
	connected := b.c.nodes[b.name] == b
	b.c.mu.RUnlock()
	return hub.BrokerStats{
		Connected: connected,
		Sent:      b.stats.sent.Load(),
		Received:  b.stats.received.Load(),
		Lost:      b.stats.lost.Load(),
	}
}

// Close takes the node out of the cluster: the calls in flight to its
// peers end with -32006, and its hub receives nothing more.
func (b *Broker) Close() error {
	b.closeOnce.Do(func() {
		c := b.c
		c.mu.Lock()
		b.closed.Store(true)
		if c.nodes[b.name] == b {
			delete(c.nodes, b.name)
		}
		c.mu.Unlock()
		b.stop()
		close(b.done)
		b.wg.Wait()
	})
	return nil
}

// Epoch implements hub.Sequencer.
func (s sequencer) Epoch() string { return s.c.epoch }

// Sequence implements hub.Sequencer. It keeps a copy of data: the hub
// may reuse its own.
func (s sequencer) Sequence(_ context.Context, topic string, data []byte) (uint64, string, error) {
	seq, err := s.c.sequence(s.Broker, topic, slices.Clone(data))
	if err == nil {
		s.stats.sent.Add(1)
	}
	return seq, s.c.epoch, err
}

// item is an event (at a position, in a sequenced cluster) or a change of
// presence, waiting for a node.
type item struct {
	seq      uint64
	topic    string
	data     []byte
	presence *presenceChange
}

type presenceChange struct {
	join            bool
	who             hub.PeerInfo
	changed, others []string
}

// itemOverhead is what an item counts in a queue's bytes beyond its
// topic and data, or its patterns.
const itemOverhead = 64

// size is what an item counts in a queue's bytes.
func (it item) size() int {
	n := itemOverhead + len(it.topic) + len(it.data)
	if p := it.presence; p != nil {
		n += len(p.who.ID) + len(p.who.User) + len(p.who.Node)
		for _, q := range p.changed {
			n += len(q)
		}
		for _, q := range p.others {
			n += len(q)
		}
	}
	return n
}

// inbox is what waits for a node, in order.
type inbox struct {
	mu    sync.Mutex
	items []item
	bytes int           // the sizes of items
	lost  uint64        // items left out since the last take: the queue was full
	kick  chan struct{} // one token when items wait
}

func (q *inbox) push(it item, limit int) {
	q.mu.Lock()
	if n := it.size(); q.bytes+n > limit {
		q.lost++
	} else {
		q.items = append(q.items, it)
		q.bytes += n
	}
	q.mu.Unlock()
	select {
	case q.kick <- struct{}{}:
	default:
	}
}

func (q *inbox) take(dst []item) ([]item, uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	dst = append(dst[:0], q.items...)
	clear(q.items)
	q.items, q.bytes = q.items[:0], 0
	lost := q.lost
	q.lost = 0
	return dst, lost
}

// deliverLoop hands the node's hub what the other nodes sent it, in
// order, until Close.
func (b *Broker) deliverLoop() {
	var batch []item
	for {
		select {
		case <-b.done:
			return
		case <-b.in.kick:
		}
		var lost uint64
		batch, lost = b.in.take(batch)
		for _, it := range batch {
			b.deliver(it)
		}
		clear(batch)
		if lost > 0 {
			b.stats.lost.Add(lost)
			b.h.Missed("membroker: events from other nodes lost: the node's queue was full")
		}
	}
}

func (b *Broker) deliver(it item) {
	switch {
	case it.presence != nil:
		p := it.presence
		b.h.RemotePresenceChanged(p.join, p.who, p.changed, p.others)
		return
	case it.seq > 0:
		if _, err := b.h.DeliverAt(it.seq, it.topic, it.data); err != nil {
			b.stats.lost.Add(1)
			return
		}
	default:
		b.h.Deliver(it.topic, it.data)
	}
	b.stats.received.Add(1)
}

// presenceChanged queues a change of presence of b's hub for every other
// node.
func (b *Broker) presenceChanged(join bool, who hub.PeerInfo, changed, others []string) {
	pc := &presenceChange{join: join, who: who, changed: slices.Clone(changed), others: slices.Clone(others)}
	for _, n := range b.c.others(b) {
		n.in.push(item{presence: pc}, b.c.o.Queue)
	}
}
