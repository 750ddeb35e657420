package hub

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"sync"
	"weak"

	"github.com/switchboard-rpc/switchboard/peer"
)

// This file replays, to a subscription that resumes, the events the store
// holds since its position (how the seam is kept: see stream.go).

// replayState is a peer's replays and the events held back meanwhile.
// Its fields are guarded by h.mu, except wg.
type replayState struct {
	jobs     []replayJob
	paused   bool           // a replay goroutine runs; live messages go to held
	held     []*peer.Shared // live messages waiting for the replays to end
	heldB    int            // their bytes
	overflow bool           // held went over maxHeld: the peer was closed
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
				if err := p.conn.PostShared(m); err != nil {
					break
				}
			}
			p.rs.held, p.rs.heldB, p.rs.paused = nil, 0, false
			h.mu.Unlock()
			return
		}
		p.rs.held, p.rs.heldB = nil, 0
		h.mu.Unlock()
		for _, m := range batch {
			if err := p.conn.SendShared(ctx, m); err != nil {
				return
			}
		}
	}
}

// errLost ends a replay whose events were dropped before it sent them.
var errLost = errors.New("hub: history dropped events being replayed")

// replayJob sends the events of j, waiting for room in p's queue.
func (h *Hub) replayJob(ctx context.Context, p *Peer, j replayJob) error {
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
			msg := h.replays.get(h.ep.Load(), j.pattern, e)
			// Counted before it is sent, so that the peer never sees an
			// event that Stats does not count yet; taken back if not sent.
			h.streams.replayed.Add(1)
			if err := p.conn.SendShared(ctx, msg); err != nil {
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

// replayFrames shares the messages of replayed events between the peers
// that replay the same pattern: a thousand clients resuming from the same
// position get the same events, and the hub holds each message once,
// however many queues it waits in, as it does live events. A message is
// found by its epoch, pattern (its "replay" field) and position for as
// long as some queue still holds it; then the collector takes it, and its
// entry with it. The zero value is ready to use.
type replayFrames struct {
	mu sync.Mutex
	m  map[replayKey]weak.Pointer[peer.Shared]
}

type replayKey struct {
	ep      *epochName
	pattern string
	seq     uint64
}

// get returns the message of e replayed for pattern in epoch ep, made
// now unless a peer's queue still holds it.
func (r *replayFrames) get(ep *epochName, pattern string, e Event) *peer.Shared {
	k := replayKey{ep, pattern, e.Seq}
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := r.m[k].Value(); s != nil {
		return s
	}
	if r.m == nil {
		r.m = make(map[replayKey]weak.Pointer[peer.Shared])
	}
	s := peer.NewShared(replayedEvent(e, ep.json, pattern))
	w := weak.Make(s)
	r.m[k] = w
	runtime.AddCleanup(s, r.forget, replayEntry{k, w})
	return s
}

type replayEntry struct {
	k replayKey
	w weak.Pointer[peer.Shared]
}

// forget drops the entry of a message the collector took, unless it was
// made again since.
func (r *replayFrames) forget(e replayEntry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m[e.k] == e.w {
		delete(r.m, e.k)
	}
}

// replayedEvent returns a replayed rpc.event: the live one's, and the
// pattern it is replayed for.
func replayedEvent(e Event, epochJSON []byte, pattern string) []byte {
	const replay = `,"replay":"`
	b := make([]byte, 0, len(eventHead)+len(e.Topic)+len(eventData)+len(e.Data)+len(eventSeq)+20+
		len(eventEpoch)+len(epochJSON)+len(replay)+len(pattern)+3)
	b = append(b, eventHead...)
	b = append(b, e.Topic...)
	b = append(b, eventData...)
	b = append(b, e.Data...)
	b = append(b, eventSeq...)
	b = strconv.AppendUint(b, e.Seq, 10)
	b = append(b, eventEpoch...)
	b = append(b, epochJSON...)
	b = append(b, replay...)
	b = append(b, pattern...)
	return append(b, `"}}`...)
}

// endReplay stops p's replay; Leave calls it with h.mu held, and waits
// for the goroutine once it has released h.mu.
func (p *Peer) endReplay() {
	if p.rs.cancel != nil {
		p.rs.cancel()
	}
	p.rs.jobs, p.rs.held, p.rs.heldB = nil, nil, 0
}
