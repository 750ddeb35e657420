package natsbroker

import (
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"
)

// This file relays events over core NATS (without JetStream), and
// notices those lost on the way. Each node numbers the events it sends,
// 1, 2, 3... for the life of its broker (its run, a random word in the
// subject), whether NATS takes them or not: an event sent while the link
// is down keeps its number, so the others see the gap when the next one
// arrives. Every heartbeat, a node that sent events since it last said so
// sends a mark, "<prefix>.ev.<node>.<run>.<number>" without a topic: the
// number of its latest event. It goes on the events' subject, so it
// arrives after them; a node that stops publishing after an outage is
// noticed too. The first mark, sent at start, says 0, so that the others
// know a node before it sends anything. A receiving node that finds numbers missing counts them
// as lost and calls hub.BrokerHandle.Missed, which closes its subscribers so that
// they resume and are told they missed events.

// relayState numbers the events sent and follows those received.
type relayState struct {
	sent   atomic.Uint64      // the number of the latest event sent; Forward alone writes it
	marked uint64             // the latest number a mark said, plus one (0: none yet); the directory's loop alone uses it
	from   map[string]*origin // the latest number heard from each node; receive alone uses it
}

// origin is where a node's events are, as this one heard them.
type origin struct {
	run string
	seq uint64
}

// Forward sends an event published on this node to the others. It
// implements hub.Broker: it does not wait for the network, only for room
// in the connection's buffer; an event NATS refuses (the link is down)
// is counted as unsent. The hub calls it with its publish lock held.
func (b *Broker) Forward(topic string, data []byte) {
	seq := b.rl.sent.Load() + 1
	var num [20]byte
	err := b.nc.Publish(b.evPub+string(strconv.AppendUint(num[:0], seq, 10))+"."+encodeTopic(topic), data)
	b.rl.sent.Store(seq) // after Publish: a mark never goes before the event
	if err != nil {
		b.stats.unsent.Add(1)
		return
	}
	b.stats.sent.Add(1)
}

// markEvents sends the number of the latest event, if it changed since
// the last mark, or none was sent yet: the first, 0, tells the others
// where this node's events start. The directory's loop calls it at start
// and every heartbeat.
func (b *Broker) markEvents() {
	if b.js != nil {
		return
	}
	seq := b.rl.sent.Load()
	if seq+1 == b.rl.marked {
		return
	}
	if b.nc.Publish(b.evPub+strconv.FormatUint(seq, 10), nil) == nil {
		b.rl.marked = seq + 1
	}
}

// receive delivers an event of another node, or takes in its mark.
func (b *Broker) receive(m *nats.Msg) {
	rest, ok := strings.CutPrefix(m.Subject, b.evSub)
	if !ok {
		return
	}
	node, rest, _ := strings.Cut(rest, ".")
	if node == b.node {
		return // this node's own, delivered here already
	}
	run, rest, _ := strings.Cut(rest, ".")
	num, topic, event := strings.Cut(rest, ".")
	seq, err := strconv.ParseUint(num, 10, 64)
	if err != nil || run == "" {
		b.log.Warn("cluster event dropped: not a node's numbered event", zap.String("subject", m.Subject))
		return
	}
	b.follow(node, run, seq, event)
	if event {
		b.deliver(0, topic, m.Data)
	}
}

// follow notes that node's run reached seq, an event or a mark, and tells
// the hub when events are missing before it.
func (b *Broker) follow(node, run string, seq uint64, event bool) {
	if b.rl.from == nil {
		b.rl.from = make(map[string]*origin)
	}
	o := b.rl.from[node]
	if o == nil {
		// The first heard of this node: what it sent before was for the
		// nodes linked then.
		b.rl.from[node] = &origin{run, seq}
		return
	}
	var missing uint64
	switch {
	case o.run != run: // the node restarted: its first events stayed there
		missing = seq - 1
		if !event {
			missing = seq
		}
		o.run, o.seq = run, seq
	case seq > o.seq:
		missing = seq - o.seq
		if event {
			missing--
		}
		o.seq = seq
	}
	if missing == 0 {
		return
	}
	b.stats.lost.Add(missing)
	b.log.Warn("cluster events missed: telling this node's subscribers", zap.String("peer_node", node), zap.Uint64("missed", missing))
	b.h.Missed("cluster events missed")
}
