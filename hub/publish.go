package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/switchboard-rpc/switchboard/internal/jsonx"
	"github.com/switchboard-rpc/switchboard/peer"
)

// This file publishes events and fans them out to the subscribers here
// (and, with a Broker, to the other nodes).

// publishResult is the result of rpc.publish.
type publishResult struct {
	Delivered int    `json:"delivered"`
	Seq       uint64 `json:"seq"`
	Epoch     string `json:"epoch"`
}

func (h *Hub) servePublish(ctx context.Context, req *peer.Request) (any, error) {
	var p struct {
		Topic *string         `json:"topic"`
		Data  json.RawMessage `json:"data"`
	}
	var a []json.RawMessage
	switch form, err := readParams(req.Params, &p, &a); {
	case form == paramsByName && err != nil:
		return nil, invalidParams("rpc.publish takes {\"topic\": string, \"data\": any}")
	case form == paramsByPosition:
		if err != nil || len(a) < 1 || len(a) > 2 || json.Unmarshal(a[0], &p.Topic) != nil {
			return nil, invalidParams("rpc.publish takes [topic, data]")
		}
		if len(a) == 2 {
			p.Data = a[1]
		}
	}
	if p.Topic == nil {
		return nil, invalidParams("rpc.publish needs a topic")
	}
	topic := *p.Topic
	if err := h.checkTopic(topic, false); err != nil {
		return nil, err
	}
	if err := h.allow(ctx, Publish, topic); err != nil {
		return nil, err
	}
	data := []byte(p.Data)
	if len(data) == 0 {
		data = []byte("null")
	}
	n, at, err := h.publish(ctx, topic, data)
	if err != nil {
		return nil, err
	}
	return publishResult{n, at.Seq, at.Epoch}, nil
}

// Publish sends data to every peer subscribed to a pattern matching topic,
// as an rpc.event notification, and returns how many peers it reached.
// The event is encoded once; data may be anything encoding/json accepts
// (a json.RawMessage is sent as is). Publish never waits for a subscriber:
// one whose queue of events is full is closed with 1008 and not counted.
// Publishing from Go code is not subject to the hub's Policy.
//
// In a cluster, the count is of this hub's subscribers; the other nodes'
// get the event too. With a [Sequencer], Publish appends the event to
// its stream and waits (up to 5 s, or ctx) for it to come back to this
// hub, to count them; it fails when the stream is unreachable.
func (h *Hub) Publish(ctx context.Context, topic string, data any) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if !validTopic(topic, false, h.o.MaxTopicLength) {
		return 0, fmt.Errorf("%w: %q", ErrInvalidTopic, topic)
	}
	raw, err := jsonx.Marshal(data)
	if err != nil {
		return 0, fmt.Errorf("hub: encode data for %s: %w", topic, err)
	}
	n, _, err := h.publish(ctx, topic, raw)
	return n, err
}

// publish records the event, gives it its position and fans it out,
// here and, with a Broker, on the other nodes. topic must be valid and
// data valid JSON.
func (h *Hub) publish(ctx context.Context, topic string, data []byte) (delivered int, at Position, err error) {
	if h.seqr != nil {
		return h.publishSequenced(ctx, topic, data)
	}
	h.stats.published.Add(1)
	n, seq, err := h.deliver(topic, data, 0, h.o.Broker != nil)
	return n, Position{Epoch: h.ep.Load().name, Seq: seq}, err
}

// deliver records an event and fans it out to this hub's subscribers. Its
// position is at, or the next one the store gives when at is 0; forward
// hands it to the Broker once delivered here.
func (h *Hub) deliver(topic string, data []byte, at uint64, forward bool) (delivered int, seq uint64, err error) {
	dropped, slow := 0, 0

	// The message is built outside the lock, but for its position; the
	// store keeps its data part, so the event is in memory once.
	msg := make([]byte, 0, len(eventHead)+len(topic)+len(eventData)+len(data)+
		len(eventSeq)+20+len(eventEpoch)+len(h.ep.Load().json)+2)
	msg = append(msg, eventHead...)
	msg = append(msg, topic...)
	msg = append(msg, eventData...)
	msg = append(msg, data...)
	stored := msg[len(msg)-len(data) : len(msg) : len(msg)]

	h.mu.Lock()
	if at == 0 {
		seq, err = h.store.Append(topic, stored)
	} else {
		seq, err = at, h.store.(positionedStore).AppendAt(topic, at, stored)
	}
	if err != nil {
		h.mu.Unlock()
		return 0, 0, fmt.Errorf("hub: record event on %s: %w", topic, err)
	}
	h.last = seq
	if forward {
		h.o.Broker.Forward(topic, stored)
	}
	if h.watches != nil {
		h.watchedLocked(topic, seq)
	}
	nodes := h.root.match(h.match[:0], topic)
	if len(nodes) == 0 {
		if at != 0 {
			h.sequencedLocked(seq, 0)
		}
		h.mu.Unlock()
		return 0, seq, nil
	}
	ev := peer.NewShared(appendPosition(msg, seq, h.ep.Load().json))
	dedup := len(nodes) > 1
	if dedup {
		h.seq++
	}
	for _, n := range nodes {
		for _, s := range n.subs {
			p := s.p
			if dedup {
				if p.mark == h.seq {
					continue
				}
				p.mark = h.seq
			}
			var err error
			if p.rs.paused {
				err = h.hold(p, ev)
			} else {
				err = p.conn.PostShared(ev) // the common case, kept inline
			}
			switch {
			case err == nil:
				delivered++
			case err == peer.ErrTooSlow: //nolint:errorlint // only the Post that closes the peer returns it bare
				dropped++
				slow++
			default: // closed already (too slow earlier, or gone)
				dropped++
			}
		}
	}
	clear(nodes)
	h.match = nodes[:0]
	if at != 0 {
		h.sequencedLocked(seq, delivered)
	}
	h.mu.Unlock()

	h.stats.delivered.Add(uint64(delivered))
	if dropped > 0 {
		h.stats.dropped.Add(uint64(dropped))
		h.stats.slow.Add(uint64(slow))
	}
	return delivered, seq, nil
}

// appendPosition ends an event message begun up to its data.
func appendPosition(msg []byte, seq uint64, epochJSON []byte) []byte {
	msg = append(msg, eventSeq...)
	msg = strconv.AppendUint(msg, seq, 10)
	msg = append(msg, eventEpoch...)
	msg = append(msg, epochJSON...)
	return append(msg, "}}"...)
}

// post queues a message for p, or holds it while p's replays run. It
// is called with h.mu held and never waits.
func (h *Hub) post(p *Peer, method string, msg []byte) error {
	if !p.rs.paused {
		return p.conn.Post(msg)
	}
	return h.hold(p, peer.NewShared(msg))
}

// hold keeps a message for p while p's replays run, or closes p when too
// many wait, or too many bytes.
func (h *Hub) hold(p *Peer, msg *peer.Shared) error {
	if p.rs.overflow {
		return peer.ErrClosed
	}
	if len(p.rs.held) >= maxHeld || len(p.rs.held) > 0 && p.rs.heldB+len(msg.Bytes()) > maxHeldBytes {
		p.rs.overflow = true
		p.rs.held, p.rs.heldB = nil, 0
		_ = p.conn.CloseWith(peer.ClosePolicy, "too slow")
		return peer.ErrTooSlow
	}
	p.rs.held = append(p.rs.held, msg)
	p.rs.heldB += len(msg.Bytes())
	return nil
}

// Encoding of rpc.event. The topic needs no escaping: the topic syntax
// allows no character JSON would escape; nor does an epoch from
// NewMemoryStore. A Store's epoch is escaped if it needs to be.
const (
	notifyHead = `{"jsonrpc":"2.0","method":"`
	notifyMid  = `","params":`
	eventHead  = notifyHead + "rpc.event" + notifyMid + `{"topic":"`
	eventData  = `","data":`
	eventSeq   = `,"seq":`
	eventEpoch = `,"epoch":`
)
