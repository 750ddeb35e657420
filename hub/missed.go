package hub

import (
	"slices"

	"github.com/switchboard-rpc/switchboard/internal/jsonx"
	"github.com/switchboard-rpc/switchboard/internal/wildcard"
)

// This file tells subscriptions that events from other nodes of a
// cluster may have been lost, without closing their connections: the hub
// sends rpc.missed, naming the subscriptions' patterns, and the client
// resumes each of them from the last position it processed (rpc.subscribe
// with "since"), on the same connection. The hub has marked the gap, so
// that resume says "recovered": false, and the client reports the loss.

// missedParams is the params of rpc.missed.
type missedParams struct {
	Topics []string `json:"topics"`
	Epoch  string   `json:"epoch"`
	Seq    uint64   `json:"seq"`
}

// MissedTopics tells the hub that events from other nodes, published on
// the given topics, were lost (a gap in a node's numbered events): as
// with [BrokerHandle.Interrupted], a subscription resuming from before
// now is told it did not recover everything, and each peer subscribed to
// a pattern matching one of the topics is sent an rpc.missed notification
// naming those of its patterns, so that its client resumes them. No
// topics (nil) means any topic: every subscription is told. It returns
// how many peers were told.
func (b *BrokerHandle) MissedTopics(topics []string) int {
	h := b.h
	h.mu.Lock()
	defer h.mu.Unlock()
	h.gap = h.last + 1
	told := 0
	epoch := h.ep.Load().name
	for _, p := range h.peers {
		var patterns []string
		for pattern := range p.subs {
			if matchesAny(pattern, topics) {
				patterns = append(patterns, pattern)
			}
		}
		if len(patterns) == 0 {
			continue
		}
		slices.Sort(patterns)
		params, _ := jsonx.Marshal(missedParams{Topics: patterns, Epoch: epoch, Seq: h.last})
		msg := make([]byte, 0, len(notifyHead)+len("rpc.missed")+len(notifyMid)+len(params)+1)
		msg = append(msg, notifyHead...)
		msg = append(msg, "rpc.missed"...)
		msg = append(msg, notifyMid...)
		msg = append(msg, params...)
		msg = append(msg, '}')
		// Under h.mu, in order with the events: the peer gets it after
		// every event up to h.last, and before any later one.
		if h.post(p, "rpc.missed", msg) == nil {
			told++
		}
	}
	return told
}

// matchesAny reports whether pattern matches one of topics, or topics is
// nil (any topic).
func matchesAny(pattern string, topics []string) bool {
	if topics == nil {
		return true
	}
	for _, t := range topics {
		if wildcard.Match(pattern, t) {
			return true
		}
	}
	return false
}
