package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/switchboard-rpc/switchboard/peer"
)

// This file gives events their positions and lets subscriptions resume
// from one: rpc.subscribe with "since" replays what the store holds, then
// the subscription goes on live, with nothing twice and nothing skipped.
//
// How the seam is kept. Positions are given under h.mu, the lock that
// fan-out holds, so a subscription registered under h.mu at head H gets
// live every event after H and none before. Its replay covers what the
// store holds up to H. While a peer has replays to send, its live events
// (all of them, not only the recovering subscription's) wait in the
// peer's held list, so the peer receives the replay, then the held
// events, then live ones: each subscription's events arrive in increasing
// position order. The replay runs on a goroutine of the peer's, since it
// waits for room in the connection's queue; the rpc.subscribe result is
// sent at once, before the replayed events.
//
// Replayed events carry "replay": the pattern they are replayed for. A
// client with one subscription needs nothing more; one with several
// subscriptions whose patterns overlap tells by it which subscription a
// replayed event belongs to, and takes live events for a subscription
// only after the position its rpc.subscribe result gave.

// streamStats count recoveries.
type streamStats struct {
	recovered, unrecovered, replayed, lost atomic.Uint64
}

// StreamStats count what the history holds and what recoveries did.
type StreamStats struct {
	HistoryStats        // what the store holds
	Recovered    uint64 // subscriptions resumed with every event since their position
	Unrecovered  uint64 // subscriptions resumed with events missing (dropped, or another epoch)
	Replayed     uint64 // events sent by replays
	Lost         uint64 // replays cut short because the history dropped events before they were sent
}

const (
	// replayPage is how many events a replay reads from the store at once.
	replayPage = 256

	// maxHeld bounds the live events that wait for a peer while its
	// replays are sent. A peer whose replay is slower than the events
	// published meanwhile is closed with 1008, as a peer too slow for
	// its events is, and recovers from its last position when it comes
	// back.
	maxHeld = 4096

	// flushHeld is how many held events may be queued at once, without
	// waiting for room, when a replay ends.
	flushHeld = 256

	// DefaultHistoryLimit and MaxHistoryLimit bound the events rpc.history
	// returns: the default when no limit is asked, and the most.
	DefaultHistoryLimit = 100
	MaxHistoryLimit     = 1000
)

// replayState is a peer's replays and the events held back meanwhile.
// Its fields are guarded by h.mu, except wg.
type replayState struct {
	jobs     []replayJob
	paused   bool   // a replay goroutine runs; live messages go to held
	held     []held // live messages waiting for the replays to end
	overflow bool   // held went over maxHeld: the peer was closed
	ctx      context.Context
	cancel   context.CancelFunc // ends the replay (Leave)
	wg       sync.WaitGroup
}

// replayJob replays the events of pattern after position after, up to
// head, where the subscription went live.
type replayJob struct {
	pattern     string
	after, head uint64
	promised    bool // the result said recovered: true
}

// held is a message waiting for a paused peer.
type held struct {
	method string
	msg    []byte
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

// params returns the params of a message built from notifyHead.
func (m held) params() []byte {
	return m.msg[len(notifyHead)+len(m.method)+len(notifyMid) : len(m.msg)-1]
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
	nodes := h.root.match(h.match[:0], topic)
	if len(nodes) == 0 {
		if at != 0 {
			h.sequencedLocked(seq, 0)
		}
		h.mu.Unlock()
		return 0, seq, nil
	}
	msg = appendPosition(msg, seq, h.ep.Load().json)
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
				err = h.hold(p, "rpc.event", msg)
			} else {
				err = p.conn.Post(msg) // the common case, kept inline
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
	return h.hold(p, method, msg)
}

// hold keeps a message for p while p's replays run, or closes p when too
// many wait.
func (h *Hub) hold(p *Peer, method string, msg []byte) error {
	if p.rs.overflow {
		return peer.ErrClosed
	}
	if len(p.rs.held) >= maxHeld {
		p.rs.overflow = true
		p.rs.held = nil
		_ = p.conn.CloseWith(peer.ClosePolicy, "too slow")
		return peer.ErrTooSlow
	}
	p.rs.held = append(p.rs.held, held{method, msg})
	return nil
}

// subscribeRequest is the params of rpc.subscribe.
type subscribeRequest struct {
	topics   []string
	since    *Position
	presence bool
}

// subscribeResult is the result of rpc.subscribe.
type subscribeResult struct {
	Topics    []string `json:"topics"`
	Epoch     string   `json:"epoch"`
	Seq       uint64   `json:"seq"`
	Recovered *bool    `json:"recovered,omitempty"`
}

func (h *Hub) serveSubscribe(ctx context.Context, req *peer.Request) (any, error) {
	p, err := h.caller(ctx, req.Method)
	if err != nil {
		return nil, err
	}
	sr, err := h.subscribeParams(req.Params)
	if err != nil {
		return nil, err
	}
	for _, t := range sr.topics {
		if err := h.allow(ctx, Subscribe, t); err != nil {
			return nil, err
		}
		if sr.presence {
			if err := h.allow(ctx, Presence, t); err != nil {
				return nil, err
			}
		}
	}
	return h.subscribeFrom(p, sr)
}

// subscribeFrom subscribes p to the patterns of sr and, with sr.since,
// starts their replays.
func (h *Hub) subscribeFrom(p *Peer, sr subscribeRequest) (subscribeResult, error) {
	epoch := h.ep.Load().name
	res := subscribeResult{Topics: sr.topics, Epoch: epoch}
	// Whether everything after since is held is asked before the
	// subscription starts: an event dropped in between is then noticed
	// by the replay, which closes the connection rather than skip it.
	var after uint64
	complete := false
	if sr.since != nil && sr.since.Epoch == epoch {
		after = sr.since.Seq
		if h.seqr != nil {
			// A position another node gave may be ahead of what this
			// one has read of the stream: wait until it is not.
			h.waitDelivered(context.Background(), epoch, after)
		}
		complete = true
		for _, t := range sr.topics {
			page, err := h.store.Read(Query{Pattern: t, After: after})
			if err != nil {
				return res, fmt.Errorf("hub: read history of %s: %w", t, err)
			}
			if !page.Complete || after > page.Last {
				complete = false
			}
		}
	}

	h.mu.Lock()
	if err := h.subscribeLocked(p, sr.topics, sr.presence); err != nil {
		h.mu.Unlock()
		return res, err
	}
	res.Seq = h.last
	if e := h.ep.Load().name; e != epoch { // restarted meanwhile
		res.Epoch = e
		after, complete = 0, false
	}
	if sr.since != nil {
		if after > h.last { // not a position of this stream
			after, complete = 0, false
		}
		if after < h.gap { // events from other nodes may be missing
			complete = false
		}
		for _, t := range sr.topics {
			p.rs.jobs = append(p.rs.jobs, replayJob{pattern: t, after: after, head: h.last, promised: complete})
		}
		h.startReplay(p)
	}
	h.mu.Unlock()

	if sr.since != nil {
		res.Recovered = &complete
		if complete {
			h.streams.recovered.Add(1)
		} else {
			h.streams.unrecovered.Add(1)
		}
	}
	return res, nil
}

// startReplay starts p's replay goroutine unless it runs already. It is
// called with h.mu held.
func (h *Hub) startReplay(p *Peer) {
	if p.rs.paused {
		return // the running one takes the new jobs
	}
	p.rs.paused = true
	if p.rs.ctx == nil {
		p.rs.ctx, p.rs.cancel = context.WithCancel(context.Background())
	}
	ctx := p.rs.ctx
	p.rs.wg.Go(func() { h.replay(ctx, p) })
}

// replay sends p's replays, then the live messages held meanwhile, and
// resumes live delivery. It ends early when the connection or ctx does.
func (h *Hub) replay(ctx context.Context, p *Peer) {
	for {
		h.mu.Lock()
		if p.left || p.rs.overflow {
			h.mu.Unlock()
			return
		}
		if len(p.rs.jobs) > 0 {
			j := p.rs.jobs[0]
			p.rs.jobs = p.rs.jobs[1:]
			h.mu.Unlock()
			if err := h.replayJob(ctx, p, j); err != nil {
				return
			}
			continue
		}
		batch := p.rs.held
		if len(batch) <= flushHeld {
			// Few enough to queue now, under the lock, before any
			// event published after them.
			for _, m := range batch {
				if err := p.conn.Post(m.msg); err != nil {
					break
				}
			}
			p.rs.held, p.rs.paused = nil, false
			h.mu.Unlock()
			return
		}
		p.rs.held = nil
		h.mu.Unlock()
		for _, m := range batch {
			if err := p.conn.Notify(ctx, m.method, json.RawMessage(m.params())); err != nil {
				return
			}
		}
	}
}

// errLost ends a replay whose events were dropped before it sent them.
var errLost = errors.New("hub: history dropped events being replayed")

// replayJob sends the events of j, waiting for room in p's queue.
func (h *Hub) replayJob(ctx context.Context, p *Peer, j replayJob) error {
	var buf []byte
	after := j.after
	for after < j.head {
		h.mu.Lock()
		_, subscribed := p.subs[j.pattern]
		h.mu.Unlock()
		if !subscribed {
			return nil // unsubscribed meanwhile: nobody wants the rest
		}
		page, err := h.store.Read(Query{Pattern: j.pattern, After: after, Limit: replayPage})
		if err != nil {
			_ = p.conn.CloseWith(peer.CloseInternalError, "history unavailable")
			return err
		}
		if j.promised && !page.Complete {
			// Told it had everything, the peer would miss events: close
			// it, and it learns what is missing when it resumes.
			h.streams.lost.Add(1)
			_ = p.conn.CloseWith(peer.ClosePolicy, "too slow")
			return errLost
		}
		for _, e := range page.Events {
			if e.Seq > j.head {
				return nil
			}
			buf = appendReplayed(buf[:0], e, h.ep.Load().json, j.pattern)
			// Counted before it is sent, so that the peer never sees an
			// event that Stats does not count yet; taken back if not sent.
			h.streams.replayed.Add(1)
			if err := p.conn.Notify(ctx, "rpc.event", json.RawMessage(buf)); err != nil {
				h.streams.replayed.Add(^uint64(0))
				return err
			}
			after = e.Seq
		}
		if len(page.Events) < replayPage {
			return nil
		}
	}
	return nil
}

// appendReplayed appends the params of a replayed rpc.event.
func appendReplayed(b []byte, e Event, epochJSON []byte, pattern string) []byte {
	b = append(b, `{"topic":"`...)
	b = append(b, e.Topic...)
	b = append(b, eventData...)
	b = append(b, e.Data...)
	b = append(b, eventSeq...)
	b = strconv.AppendUint(b, e.Seq, 10)
	b = append(b, eventEpoch...)
	b = append(b, epochJSON...)
	b = append(b, `,"replay":"`...)
	b = append(b, pattern...)
	return append(b, `"}`...)
}

// endReplay stops p's replay; Leave calls it with h.mu held, and waits
// for the goroutine once it has released h.mu.
func (p *Peer) endReplay() {
	if p.rs.cancel != nil {
		p.rs.cancel()
	}
	p.rs.jobs, p.rs.held = nil, nil
}

// subscribeParams reads the params of rpc.subscribe: those of
// topicParams, and by name "since" and "presence".
func (h *Hub) subscribeParams(params json.RawMessage) (subscribeRequest, error) {
	topics, err := h.topicParams(params)
	if err != nil {
		return subscribeRequest{}, err
	}
	var p struct {
		Since    *json.RawMessage `json:"since"`
		Presence *bool            `json:"presence"`
	}
	if _, err := readParams(params, &p, nil); err != nil {
		return subscribeRequest{}, invalidParams(`"presence" takes true or false`)
	}
	sr := subscribeRequest{topics: topics, presence: p.Presence != nil && *p.Presence}
	if p.Since != nil && string(*p.Since) != "null" {
		since, err := positionParam(*p.Since)
		if err != nil {
			return subscribeRequest{}, err
		}
		sr.since = &since
	}
	return sr, nil
}

// positionParam reads {"epoch": string, "seq": integer >= 0}.
func positionParam(raw json.RawMessage) (Position, error) {
	var p struct {
		Epoch *string      `json:"epoch"`
		Seq   *json.Number `json:"seq"`
	}
	const usage = `"since" takes {"epoch": string, "seq": integer}`
	if form, err := readParams(raw, &p, nil); form != paramsByName || err != nil || p.Epoch == nil || p.Seq == nil {
		return Position{}, invalidParams(usage)
	}
	seq, err := strconv.ParseUint(p.Seq.String(), 10, 64)
	if err != nil {
		return Position{}, invalidParams(usage)
	}
	return Position{Epoch: *p.Epoch, Seq: seq}, nil
}

// Store returns the hub's event stream, to read its history from Go code.
func (h *Hub) Store() Store { return h.store }

// Position returns the position of the latest event published.
func (h *Hub) Position() Position {
	h.mu.Lock()
	defer h.mu.Unlock()
	return Position{Epoch: h.ep.Load().name, Seq: h.last}
}

// streamStats returns the counters of the history and of recoveries.
func (h *Hub) streamStats() StreamStats {
	return StreamStats{
		HistoryStats: h.store.Stats(),
		Recovered:    h.streams.recovered.Load(),
		Unrecovered:  h.streams.unrecovered.Load(),
		Replayed:     h.streams.replayed.Load(),
		Lost:         h.streams.lost.Load(),
	}
}
