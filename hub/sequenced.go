package hub

import (
	"context"
	"time"

	"github.com/switchboard-rpc/switchboard/internal/jsonx"
	"github.com/switchboard-rpc/switchboard/peer"
)

// This file is the hub's side of a cluster's events (the seam itself is
// broker.go): publishing through a Sequencer and waiting for the event to
// come back, and the counters of the broker.

// Cluster timing.
const (
	// sequencedWait bounds how long a publish through a Sequencer waits
	// for its event to come back, to count the subscribers it reached
	// on this node, and how long a subscription resuming from a
	// position this node has not read yet waits for it.
	sequencedWait = 5 * time.Second

	// recentCounts is how many of the latest sequenced events remember
	// how many subscribers they reached, for a publish whose event came
	// back before its Sequence call returned.
	recentCounts = 1024
)

// sequenced is the state of a hub whose Broker is a Sequencer. Guarded by
// h.mu.
type sequenced struct {
	waiters []*seqWaiter
	recent  [recentCounts]struct {
		seq uint64
		n   int
	}
}

// seqWaiter waits for the event at seq to be delivered on this node.
type seqWaiter struct {
	seq  uint64
	n    int // subscribers it reached here, when its seq is exactly seq
	done chan struct{}
}

// positionedStore is a Store that can keep events at the positions a
// Sequencer gave them ([MemoryStore] is one).
type positionedStore interface {
	AppendAt(topic string, seq uint64, data []byte) error
	Restart(epoch string)
}

// subscribersLocked returns the peers that subscribe to something; h.mu
// held.
func (h *Hub) subscribersLocked() []*Peer {
	var out []*Peer
	for _, p := range h.peers {
		if len(p.subs) > 0 {
			out = append(out, p)
		}
	}
	return out
}

// epochName is a hub's epoch, with its JSON text.
type epochName struct {
	name string
	json []byte
}

func newEpochName(epoch string) *epochName {
	b, _ := jsonx.Marshal(epoch)
	return &epochName{epoch, b}
}

// publishSequenced publishes through the Sequencer: the event is
// delivered, here and everywhere, when the stream hands it back. It
// returns how many subscribers it reached on this node, or 0 when it did
// not come back within sequencedWait (or ctx): it is in the stream, and
// its subscribers get it.
//
// It never answers with a position of an epoch this hub no longer reads:
// when the stream was replaced before the event came back, the publish
// fails, since the event is in a stream that nobody reads any more (or,
// in the new one, at a position this hub has yet to learn).
func (h *Hub) publishSequenced(ctx context.Context, topic string, data []byte) (int, Position, error) {
	h.stats.published.Add(1)
	seq, epoch, err := h.seqr.Sequence(ctx, topic, data)
	if err != nil {
		return 0, Position{}, peer.Errorf(peer.CodeApplication, "publish on %s: cluster stream unavailable: %v", topic, err)
	}
	n, _ := h.waitDelivered(ctx, epoch, seq)
	if h.ep.Load().name != epoch {
		return 0, Position{}, peer.Errorf(peer.CodeApplication, "publish on %s: cluster stream replaced: the event may be lost", topic)
	}
	return n, Position{Epoch: epoch, Seq: seq}, nil
}

// waitDelivered waits until the event at seq of epoch was delivered on
// this node, within sequencedWait, and returns how many subscribers it
// reached here (0 when not known) and whether it was delivered. An event
// of another epoch than the hub's is not delivered.
func (h *Hub) waitDelivered(ctx context.Context, epoch string, seq uint64) (int, bool) {
	h.mu.Lock()
	if h.ep.Load().name != epoch {
		h.mu.Unlock()
		return 0, false
	}
	if h.last >= seq {
		n := h.recentCount(seq)
		h.mu.Unlock()
		return n, true
	}
	w := &seqWaiter{seq: seq, done: make(chan struct{})}
	h.sq.waiters = append(h.sq.waiters, w)
	h.mu.Unlock()

	t := time.NewTimer(sequencedWait)
	defer t.Stop()
	select {
	case <-w.done:
		h.mu.Lock()
		defer h.mu.Unlock()
		return w.n, h.ep.Load().name == epoch
	case <-ctx.Done():
	case <-t.C:
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, x := range h.sq.waiters {
		if x == w {
			h.sq.waiters = append(h.sq.waiters[:i], h.sq.waiters[i+1:]...)
			break
		}
	}
	select {
	case <-w.done: // came meanwhile
		return w.n, h.ep.Load().name == epoch
	default:
		return 0, false
	}
}

// recentCount returns how many subscribers the event at seq reached, if
// it is among the latest; h.mu held.
func (h *Hub) recentCount(seq uint64) int {
	r := &h.sq.recent[seq%recentCounts]
	if r.seq == seq {
		return r.n
	}
	return 0
}

// sequencedLocked records that the event at seq reached n subscribers and
// wakes whoever waited for it; h.mu held.
func (h *Hub) sequencedLocked(seq uint64, n int) {
	r := &h.sq.recent[seq%recentCounts]
	r.seq, r.n = seq, n
	if len(h.sq.waiters) == 0 {
		return
	}
	kept := h.sq.waiters[:0]
	for _, w := range h.sq.waiters {
		if w.seq > seq {
			kept = append(kept, w)
			continue
		}
		if w.seq == seq {
			w.n = n
		}
		close(w.done)
	}
	clear(h.sq.waiters[len(kept):])
	h.sq.waiters = kept
}

// clusterStats returns the node's name and its broker's counters.
func (h *Hub) clusterStats() ClusterStats {
	if h.o.Broker == nil {
		return ClusterStats{}
	}
	return ClusterStats{Node: h.o.Broker.Node(), BrokerStats: h.o.Broker.Stats()}
}
