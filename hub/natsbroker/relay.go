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
// as lost, asks the sender which topics they carried, and tells the
// subscribers of those topics (gap.go): they resume on the same
// connection and are told they missed events.

// relayState numbers the events sent and follows those received.
type relayState struct {
	sent   atomic.Uint64      // the number of the latest event sent; Forward alone writes it
	marked uint64             // the latest number a mark said, plus one (0: none yet); the directory's loop alone uses it
	from   map[string]*origin // the latest number heard from each node; receive alone uses it

	topics sentTopics    // the topics of the latest events sent (gap.go)
	remark chan struct{} // 1-buffered: send a mark now, changed or not
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
	b.rl.topics.note(seq, topic)
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
// the last mark, or none was sent yet, or force: the first, 0, tells the
// others where this node's events start. The directory's loop calls it at
// start, every heartbeat, and, forced, when the link is back or another
// node asks.
func (b *Broker) markEvents(force bool) {
	if b.js != nil {
		return
	}
	seq := b.rl.sent.Load()
	if seq+1 == b.rl.marked && !force {
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

// follow notes that node's run reached seq, an event or a mark, and,
// when events are missing before it, finds out their topics to tell
// their subscribers.
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
	q := gapQuestion{Run: run, From: o.seq + 1, To: seq}
	switch {
	case o.run != run: // the node restarted: its first events stayed there
		q.From = 1
		o.run, o.seq = run, seq
	case seq > o.seq:
		o.seq = seq
	default:
		return
	}
	if event {
		q.To-- // the event itself is here
	}
	if q.To < q.From {
		return
	}
	b.stats.lost.Add(q.To - q.From + 1)
	b.missed(node, q)
}
