package natsbroker

import (
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/switchboard-rpc/switchboard/internal/jsonx"
	"go.uber.org/zap"
)

// This file attributes the events a node missed (relay.go) to their
// topics, so that only the subscribers of those topics are told (by
// hub.BrokerHandle.MissedTopics, which sends them rpc.missed), and finds
// the gaps soon after a link comes back.
//
// Each node keeps the topics of its latest recentTopics events by number.
// A node that finds numbers missing in another's events asks it, on
// "<prefix>.gap.<node>", which topics they carried; when the sender no
// longer knows (too many events since, or another run) or does not
// answer within gapWait, every subscriber is told.
//
// When a node's link comes back, it sends its latest number at once,
// rather than at its next heartbeat, and asks the others to send theirs
// ("<prefix>.marks"): a gap on either side of the link is found within a
// round trip of its return.

// recentTopics is how many of its latest events' topics a node keeps to
// answer the others' questions about their gaps.
const recentTopics = 1 << 14

// maxGapTopics bounds the topics an answer names: past it, the asking node
// tells every subscriber.
const maxGapTopics = 1000

// gapWait bounds how long a node waits for another to name the topics of
// the events it missed.
const gapWait = time.Second

// sentTopics is the ring of the topics of a node's latest events.
type sentTopics struct {
	mu     sync.Mutex
	topics [recentTopics]string // topics[seq%recentTopics]: the topic of event seq
}

// note keeps the topic of event seq. Forward calls it before it counts
// the event as sent.
func (s *sentTopics) note(seq uint64, topic string) {
	s.mu.Lock()
	s.topics[seq%recentTopics] = topic
	s.mu.Unlock()
}

// gapQuestion asks a node for the topics of its events from From to To
// of its run Run.
type gapQuestion struct {
	Run  string `json:"run"`
	From uint64 `json:"from"`
	To   uint64 `json:"to"`
}

// gapAnswer names them, or says All: the node no longer knows them.
type gapAnswer struct {
	Topics []string `json:"topics,omitempty"`
	All    bool     `json:"all,omitempty"`
}

// answerGap answers another node's question about the events it missed.
func (b *Broker) answerGap(m *nats.Msg) {
	var q gapQuestion
	var a gapAnswer
	latest := b.rl.sent.Load()
	switch {
	case json.Unmarshal(m.Data, &q) != nil || q.From == 0 || q.To < q.From:
		return
	case q.Run != b.run || q.To > latest || latest-q.From >= recentTopics:
		a.All = true
	default:
		seen := make(map[string]bool)
		b.rl.topics.mu.Lock()
		for seq := q.From; seq <= q.To; seq++ {
			t := b.rl.topics.topics[seq%recentTopics]
			if !seen[t] {
				seen[t] = true
				a.Topics = append(a.Topics, t)
			}
			if len(a.Topics) > maxGapTopics {
				a.Topics, a.All = nil, true
				break
			}
		}
		b.rl.topics.mu.Unlock()
	}
	msg, _ := jsonx.Marshal(a)
	_ = m.Respond(msg)
}

// missed finds out the topics of node's events missed, from its run's
// q.From to q.To, and tells the subscribers of those topics. It runs on
// the events' subscription, before the event that showed the gap is
// delivered: the subscribers are told before any later event. The
// others' events wait meanwhile, at most gapWait (the answer comes from
// the sender's own subscription, so two nodes asking each other wait for
// neither).
func (b *Broker) missed(node string, q gapQuestion) {
	topics, err := b.gapTopics(node, q)
	if b.closing.Load() {
		return // the question failed for the node closing: nobody is to be told
	}
	if err != nil {
		b.log.Warn("cluster events missed, their topics unknown: telling every subscriber",
			zap.String("peer_node", node), zap.Uint64("from", q.From), zap.Uint64("to", q.To), zap.Error(err))
	}
	told := b.h.MissedTopics(topics) // b.h is set before Start, and stays
	b.log.Warn("cluster events missed: telling their subscribers",
		zap.String("peer_node", node), zap.Uint64("missed", q.To-q.From+1), zap.Strings("topics", topics), zap.Int("peers_told", told))
}

// errGapUnknown is the error of gapTopics when the node no longer knows.
var errGapUnknown = errors.New("the node no longer knows the topics of those events")

// gapTopics asks node for the topics of the events of q; nil (and an
// error) when it cannot say.
func (b *Broker) gapTopics(node string, q gapQuestion) ([]string, error) {
	req, _ := jsonx.Marshal(q)
	msg, err := b.nc.Request(b.Subject("gap", node), req, gapWait)
	if err != nil {
		return nil, err
	}
	var a gapAnswer
	if err := json.Unmarshal(msg.Data, &a); err != nil {
		return nil, err
	}
	if a.All || len(a.Topics) == 0 {
		return nil, errGapUnknown
	}
	slices.Sort(a.Topics)
	return a.Topics, nil
}

// remark sends this node's latest number at once (the directory's loop
// does, at its next turn), as when the link is back.
func (b *Broker) remark() {
	select {
	case b.rl.remark <- struct{}{}:
	default:
	}
}

// askMarks asks the other nodes for their latest numbers, over nc (the
// connection's callbacks may run before b.nc is set).
func (b *Broker) askMarks(nc *nats.Conn) {
	_ = nc.Publish(b.Subject("marks"), nil)
}
