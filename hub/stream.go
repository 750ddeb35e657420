package hub

import (
	"sync/atomic"
)

// This file is the map of the hub's event stream, and keeps its counters.
// The life of an event, and where each step lives:
//
//  1. rpc.publish (publish.go: servePublish, or Hub.Publish from Go)
//     hands it to deliver (publish.go), which under h.mu gives it its
//     position (the Store's next, or a Sequencer's: broker.go), keeps it
//     in the Store (history.go, history_read.go), hands it to the Broker
//     and queues it for every subscriber here, without waiting.
//  2. A subscriber reads it live, or later: rpc.history reads the Store
//     (history_rpc.go), and rpc.subscribe with "since" resumes from a
//     position (subscribe.go: subscribeFrom) by replaying what the Store
//     holds since (replay.go), then going on live.
//
// How the seam between replay and live is kept. Positions are given
// under h.mu, the lock that fan-out holds, so a subscription registered
// under h.mu at head H gets live every event after H and none before.
// Its replay covers what the store holds up to H. While a peer has
// replays to send, its live events (all of them, not only the recovering
// subscription's) wait in the peer's held list (publish.go: hold), so
// the peer receives the replay, then the held events, then live ones:
// each subscription's events arrive in increasing position order. The
// replay runs on a goroutine of the peer's, since it waits for room in
// the connection's queue; the rpc.subscribe result is sent at once,
// before the replayed events.
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

	// maxHeldBytes bounds them in bytes too: 4096 events can be 4 GiB.
	maxHeldBytes = 16 << 20

	// flushHeld is how many held events may be queued at once, without
	// waiting for room, when a replay ends.
	flushHeld = 256

	// DefaultHistoryLimit and MaxHistoryLimit bound the events rpc.history
	// returns: the default when no limit is asked, and the most.
	DefaultHistoryLimit = 100
	MaxHistoryLimit     = 1000
)

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
