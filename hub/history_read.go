package hub

import (
	"sort"

	"github.com/switchboard-rpc/switchboard/internal/wildcard"
)

// This file reads the in-memory store: the events of a query, and whether
// they are all that was published.

// Read implements Store.
func (s *MemoryStore) Read(q Query) (Page, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire(s.now())
	var events []Event
	if q.Limit > 0 {
		if hasWildcard(q.Pattern) {
			events = s.scan(q)
		} else if t := s.topics[q.Pattern]; t != nil {
			events = t.read(q)
		}
	}
	return Page{Events: events, Last: s.last, Complete: s.complete(q.Pattern, q.After)}, nil
}

// read returns the events of q from one topic.
func (t *topicLog) read(q Query) []Event {
	i := t.entries.after(q.After)
	n := t.entries.len() - i
	if n > q.Limit {
		if q.Newest {
			i += n - q.Limit
		}
		n = q.Limit
	}
	events := make([]Event, n)
	for k := range events {
		e := t.entries.at(i + k)
		events[k] = Event{Topic: t.name, Data: e.data, Seq: e.seq}
	}
	return events
}

// scan returns the events of q, whose pattern has wildcards, from the log.
func (s *MemoryStore) scan(q Query) []Event {
	from := s.log.after(q.After)
	var events []Event
	take := func(e *entry) {
		if !e.gone && wildcard.Match(q.Pattern, e.t.name) {
			events = append(events, Event{Topic: e.t.name, Data: e.data, Seq: e.seq})
		}
	}
	if !q.Newest {
		for i := from; i < s.log.len() && len(events) < q.Limit; i++ {
			take(s.log.at(i))
		}
		return events
	}
	for i := s.log.len() - 1; i >= from && len(events) < q.Limit; i-- {
		take(s.log.at(i))
	}
	for i, j := 0, len(events)-1; i < j; i, j = i+1, j-1 {
		events[i], events[j] = events[j], events[i]
	}
	return events
}

// complete reports whether every event after position after on a topic
// matching pattern is held.
func (s *MemoryStore) complete(pattern string, after uint64) bool {
	if s.floor > after || s.unkept > after && s.mayBeOff(pattern) {
		return false
	}
	if !hasWildcard(pattern) {
		t := s.topics[pattern]
		return t == nil || t.dropped <= after
	}
	for name, t := range s.topics {
		if t.dropped > after && wildcard.Match(pattern, name) {
			return false
		}
	}
	return true
}

// fifo is a queue of entries in position order: pushed at the back,
// popped at the front. Its array shrinks as it empties.
type fifo struct {
	buf  []*entry
	head int
}

func (q *fifo) len() int        { return len(q.buf) - q.head }
func (q *fifo) at(i int) *entry { return q.buf[q.head+i] }
func (q *fifo) front() *entry   { return q.buf[q.head] }
func (q *fifo) after(seq uint64) int {
	return sort.Search(q.len(), func(i int) bool { return q.at(i).seq > seq })
}

func (q *fifo) push(e *entry) {
	if q.head > 0 && len(q.buf) == cap(q.buf) {
		q.shrink()
	}
	q.buf = append(q.buf, e)
}

func (q *fifo) pop() *entry {
	e := q.buf[q.head]
	q.buf[q.head] = nil
	q.head++
	if q.head == len(q.buf) {
		q.buf, q.head = q.buf[:0], 0
	}
	if cap(q.buf) > 64 && q.len() < cap(q.buf)/4 {
		q.shrink()
	}
	return e
}

// shrink moves the entries to the front of an array sized for them.
func (q *fifo) shrink() {
	buf := make([]*entry, q.len(), max(2*q.len(), 8))
	copy(buf, q.buf[q.head:])
	q.buf, q.head = buf, 0
}
