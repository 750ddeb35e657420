package hub

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/switchboard-rpc/switchboard/internal/wildcard"
)

// Position is a place in a hub's event stream: the epoch that names the
// stream and an event's sequence number in it. Sequence numbers grow in
// publish order across all topics; those of one topic are increasing but
// not contiguous. Positions of another epoch mean nothing in this one.
type Position struct {
	Epoch string `json:"epoch"`
	Seq   uint64 `json:"seq"`
}

// Event is a published event as the history holds it.
type Event struct {
	Topic string          `json:"topic"`
	Data  json.RawMessage `json:"data"`
	Seq   uint64          `json:"seq"`
}

// Store is a hub's event stream: it gives every published event its
// position and keeps recent ones, within bounds of its own, for
// rpc.history and for subscriptions that resume from a position.
//
// Positions are stream-wide, not per topic, so that a store can be backed
// by a log that numbers all its messages in one sequence and replays a
// subject filter from a sequence number (as a NATS JetStream stream does).
// [NewMemoryStore] is the default.
type Store interface {
	// Epoch names the stream. It does not change during the life of
	// the store; a store that loses its history (a restart of an
	// in-memory one) starts a new epoch.
	Epoch() string

	// Last returns the latest position given, 0 before any.
	Last() uint64

	// Append gives an event published on topic the next position and
	// keeps it, unless its topic keeps no history. The hub calls it with
	// its publish lock held, one event at a time, in the order the
	// events reach subscribers, so it must not block. The store may keep
	// data: the caller does not modify it afterwards.
	Append(topic string, data []byte) (seq uint64, err error)

	// Read returns held events that match a query.
	Read(q Query) (Page, error)

	// Stats returns what the store holds and has dropped.
	Stats() HistoryStats
}

// Query selects events from a [Store].
type Query struct {
	Pattern string // a topic, or a pattern with wildcards
	After   uint64 // only events after this position
	Limit   int    // at most this many; 0 reads none (Page.Complete and Last only)
	Newest  bool   // the newest Limit events after After, rather than the oldest
}

// Page is the answer to a Query.
type Page struct {
	Events []Event // oldest first; Data must not be modified
	Last   uint64  // the latest position given when the page was read
	// Complete reports that every event published after Query.After on
	// a topic matching Query.Pattern is still held: none was dropped by
	// the bounds, or published on a topic that keeps no history.
	// A store may say false when it cannot tell.
	Complete bool
}

// HistoryStats describe what a Store holds.
type HistoryStats struct {
	Events  int    // events held now
	Bytes   int64  // their estimated memory, with their topics', as counted against MaxBytes
	Topics  int    // topics with events held
	Evicted uint64 // events dropped by the bounds since the store was made
}

// MemoryStore is the in-memory [Store] a hub uses by default. Its epoch is
// random, so a restart tells every client that what it remembered is gone.
// It holds each topic's events within the topic's Retention and all of
// them within History.MaxBytes. Expired events are dropped as the store
// is used (each Append, Read and Stats), not by a goroutine. It is safe
// for concurrent use.
//
// Events are indexed three ways, all in position order: per topic (for
// reading a topic, and its count and byte bounds), in one log of all
// topics (for patterns with wildcards, and the bound on all bytes), and
// per age bound (for expiry, so that a topic kept an hour does not hold
// up the expiry of one kept a minute). An event dropped through one
// index stays in the others as a tombstone until it reaches their front
// or they are compacted.
type MemoryStore struct {
	epoch    string
	def      Retention
	rules    []TopicRetention
	maxBytes int64
	now      func() int64 // nanoseconds since the store was made

	mu      sync.Mutex
	last    uint64
	topics  map[string]*topicLog
	log     fifo        // every held event
	ages    []*ageClass // the events of topics with an age bound, by bound
	events  int         // events held
	bytes   int64       // their size
	evicted uint64      // events dropped by the bounds
	idle    int         // topics in the map that hold nothing
	floor   uint64      // the latest position dropped from a topic no longer remembered
	unkept  uint64      // the latest position of an event not kept (Retention.Off)
}

// topicLog is one topic's held events and what it dropped.
type topicLog struct {
	name    string
	r       Retention
	age     *ageClass // nil without an age bound
	entries fifo
	bytes   int
	dropped uint64 // the latest position dropped from this topic
	added   uint64 // the events appended, for the admin API's rates
}

// ageClass holds the events of the topics with one age bound.
type ageClass struct {
	age  int64 // nanoseconds
	log  fifo
	live int // events in log not dropped
}

// entry is one held event.
type entry struct {
	seq  uint64
	data []byte
	at   int64 // when it was appended, by the store's clock
	size int
	t    *topicLog
	gone bool // dropped: only a tombstone in the store's log
}

// NewMemoryStore returns an empty store with a new random epoch. A nil
// *History gives the defaults.
func NewMemoryStore(h *History) *MemoryStore {
	var o History
	if h != nil {
		o = *h
		o.Topics = append([]TopicRetention(nil), h.Topics...)
	}
	s := &MemoryStore{
		epoch:    newEpoch(),
		def:      o.Retention.withDefaults(Retention{DefaultHistoryEvents, DefaultHistoryAge, DefaultHistoryBytes, false}),
		maxBytes: o.MaxBytes,
		topics:   make(map[string]*topicLog),
	}
	if s.maxBytes == 0 {
		s.maxBytes = DefaultHistoryTotal
	}
	// Ages need a clock that only goes forward, and reading only the
	// monotonic one costs half of time.Now.
	start := time.Now()
	s.now = func() int64 { return int64(time.Since(start)) }
	if o.Now != nil {
		start = o.Now()
		s.now = func() int64 { return int64(o.Now().Sub(start)) }
	}
	for _, tr := range o.Topics {
		if validTopic(tr.Pattern, true, math.MaxInt) {
			s.rules = append(s.rules, TopicRetention{tr.Pattern, tr.Retention.withDefaults(s.def)})
		}
	}
	return s
}

// newEpoch returns 16 random hex digits.
func newEpoch() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand panics instead)
	return hex.EncodeToString(b[:])
}

// retention returns the Retention of a topic.
func (s *MemoryStore) retention(topic string) Retention {
	for _, tr := range s.rules {
		if wildcard.Match(tr.Pattern, topic) {
			return tr.Retention
		}
	}
	return s.def
}

// mayBeOff reports whether a topic matching pattern may keep no history.
func (s *MemoryStore) mayBeOff(pattern string) bool {
	for _, tr := range s.rules {
		if tr.Off && overlap(tr.Pattern, pattern) {
			return true
		}
	}
	return s.def.Off
}

// Epoch implements Store.
func (s *MemoryStore) Epoch() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.epoch
}

// Restart drops every event and starts the epoch named, at position 0:
// what a hub of a cluster does when the stream it reads is replaced
// (see [BrokerHandle.Restart]). The count of events evicted goes on.
func (s *MemoryStore) Restart(epoch string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.epoch = epoch
	s.last, s.floor, s.unkept = 0, 0, 0
	s.topics = make(map[string]*topicLog)
	s.log = fifo{}
	s.ages = nil
	s.events, s.bytes, s.idle = 0, 0, 0
}

// Last implements Store.
func (s *MemoryStore) Last() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// Append implements Store.
func (s *MemoryStore) Append(topic string, data []byte) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.append(topic, s.last+1, data)
	return s.last, nil
}

// AppendAt keeps an event at a position a stream gave it (a
// [Sequencer]'s), for a hub of a cluster. Positions must increase from
// one call to the next; the positions a gap skips count as dropped, so a
// recovery from before the gap reports that events are missing.
func (s *MemoryStore) AppendAt(topic string, seq uint64, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if seq <= s.last {
		return fmt.Errorf("hub: position %d is not after %d", seq, s.last)
	}
	if seq > s.last+1 {
		s.floor = seq - 1
	}
	s.append(topic, seq, data)
	return nil
}

// append keeps an event at seq, after s.last; s.mu held.
func (s *MemoryStore) append(topic string, seq uint64, data []byte) {
	s.last = seq
	t := s.topics[topic]
	if t == nil {
		r := s.retention(topic)
		if r.Off {
			s.unkept = seq
			return
		}
		t = &topicLog{name: strings.Clone(topic), r: r, age: s.ageClass(r.Age)}
		s.topics[t.name] = t
	} else if t.entries.len() == 0 {
		s.idle--
	}
	if t.entries.len() == 0 {
		s.bytes += topicOverhead
	}
	now := s.now()
	e := &entry{seq: seq, data: data, at: now, size: len(data) + 2*len(topic) + eventOverhead, t: t}
	t.entries.push(e)
	t.added++
	t.bytes += e.size
	s.log.push(e)
	if t.age != nil {
		t.age.log.push(e)
		t.age.live++
	}
	s.events++
	s.bytes += int64(e.size)

	for t.entries.len() > 0 && (t.r.Events > 0 && t.entries.len() > t.r.Events ||
		t.r.Bytes > 0 && t.bytes > t.r.Bytes) {
		s.dropFront(t)
	}
	s.expire(now)
	s.compact()
}

// ageClass returns the class of an age bound, nil for none.
func (s *MemoryStore) ageClass(age time.Duration) *ageClass {
	if age <= 0 {
		return nil
	}
	for _, c := range s.ages {
		if c.age == int64(age) {
			return c
		}
	}
	c := &ageClass{age: int64(age)}
	s.ages = append(s.ages, c)
	return c
}

// dropFront drops t's oldest event.
func (s *MemoryStore) dropFront(t *topicLog) {
	s.drop(t.entries.pop())
}

// drop marks e, already out of its topic's entries, as dropped, and
// removes it from the counts.
func (s *MemoryStore) drop(e *entry) {
	e.gone = true
	t := e.t
	t.bytes -= e.size
	t.dropped = max(t.dropped, e.seq)
	s.events--
	s.bytes -= int64(e.size)
	s.evicted++
	if t.age != nil {
		t.age.live--
	}
	if t.entries.len() == 0 {
		s.bytes -= topicOverhead
		s.idle++
		if s.idle > maxIdleTopics {
			s.forgetIdle()
		}
	}
}

// expire drops the events past their age at now and, while the store is
// over MaxBytes, the oldest events. An event at the front of an index is
// the oldest its topic holds, so it is also at the front of its topic's.
func (s *MemoryStore) expire(now int64) {
	for _, c := range s.ages {
		for c.log.len() > 0 {
			e := c.log.front()
			if !e.gone {
				if now-e.at <= c.age {
					break
				}
				e.t.entries.pop()
				s.drop(e)
			}
			c.log.pop()
		}
	}
	for s.log.len() > 0 {
		e := s.log.front()
		if !e.gone {
			if s.maxBytes <= 0 || s.bytes <= s.maxBytes {
				break
			}
			e.t.entries.pop()
			s.drop(e)
		}
		s.log.pop()
	}
}

// compact rebuilds the indexes that hold more tombstones than events.
func (s *MemoryStore) compact() {
	compactLog(&s.log, s.events)
	for _, c := range s.ages {
		compactLog(&c.log, c.live)
	}
}

// compactLog rebuilds q without its tombstones when they are over half of
// it; live is how many are not.
func compactLog(q *fifo, live int) {
	n := q.len()
	if n < 128 || live > n/2 {
		return
	}
	kept := make([]*entry, 0, live)
	for i := range n {
		if e := q.at(i); !e.gone {
			kept = append(kept, e)
		}
	}
	*q = fifo{buf: kept}
}

// forgetIdle forgets the idle topics that dropped the oldest events,
// half of them, raising floor to what they had dropped.
func (s *MemoryStore) forgetIdle() {
	var idle []*topicLog
	for _, t := range s.topics {
		if t.entries.len() == 0 {
			idle = append(idle, t)
		}
	}
	sort.Slice(idle, func(i, j int) bool { return idle[i].dropped < idle[j].dropped })
	for _, t := range idle[:len(idle)/2] {
		delete(s.topics, t.name)
		s.floor = max(s.floor, t.dropped)
		s.idle--
	}
}

// Stats implements Store. It drops expired events first.
func (s *MemoryStore) Stats() HistoryStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire(s.now())
	return HistoryStats{Events: s.events, Bytes: s.bytes, Topics: len(s.topics) - s.idle, Evicted: s.evicted}
}
