package hub

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"

	"github.com/switchboard-rpc/switchboard/peer"
)

// This file replays, to a subscription that resumes, the events the store
// holds since its position (how the seam is kept: see stream.go).

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
