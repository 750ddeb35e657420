package hub

import "sort"

// The topics of the admin API's listing (admin.topics): those held in the
// history, and the patterns peers subscribe to.

// TopicHistory is what a Store holds of one topic, for the admin API.
type TopicHistory struct {
	Topic  string
	Last   uint64 // the position of its latest event held
	Events int    // its events held
	Bytes  int64  // their size
	// Added counts the events appended to it, held or since dropped,
	// from when the store began to hold it: the admin page's event rate
	// (positions count the events of every topic).
	Added uint64
}

// A TopicLister is a [Store] that can list the topics it holds (a
// [MemoryStore] can). The admin API lists the topics of a Store that is
// not one by their subscriptions only.
type TopicLister interface {
	// Topics returns the topics that hold events and that pattern
	// covers (given as its words), in no particular order.
	Topics(covered func(topic string) bool) []TopicHistory
}

// Topics implements TopicLister. It drops expired events first.
func (s *MemoryStore) Topics(covered func(topic string) bool) []TopicHistory {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire(s.now())
	var out []TopicHistory
	for name, t := range s.topics {
		n := t.entries.len()
		if n == 0 || !covered(name) {
			continue
		}
		out = append(out, TopicHistory{Topic: name, Last: t.entries.at(n - 1).seq, Events: n, Bytes: int64(t.bytes), Added: t.added})
	}
	return out
}

// localTopics lists the topics and patterns of this hub that q selects,
// sorted; more reports whether others were left for the next page.
func (h *Hub) localTopics(q TopicQuery) (page []TopicDetail, more bool) {
	if q.Pattern == "" {
		q.Pattern = ">"
	}
	covered := func(name string) bool {
		return name > q.After && covers(q.Pattern, name)
	}
	by := make(map[string]*TopicDetail)
	h.mu.Lock()
	for _, s := range h.root.all(nil) {
		if t := by[s.pattern]; t != nil {
			t.Subscribers++
		} else if covered(s.pattern) {
			by[s.pattern] = &TopicDetail{Topic: s.pattern, Subscribers: 1}
		}
	}
	h.mu.Unlock()
	if tl, ok := h.store.(TopicLister); ok {
		for _, th := range tl.Topics(covered) {
			t := by[th.Topic]
			if t == nil {
				t = &TopicDetail{Topic: th.Topic}
				by[th.Topic] = t
			}
			t.Last, t.History, t.HistoryBytes, t.Published = th.Last, th.Events, th.Bytes, th.Added
		}
	}
	names := make([]string, 0, len(by))
	for n := range by {
		names = append(names, n)
	}
	sort.Strings(names)
	if limit := pageSize(q.Limit); len(names) > limit {
		names, more = names[:limit], true
	}
	page = make([]TopicDetail, len(names))
	for i, n := range names {
		page[i] = *by[n]
	}
	return page, more
}
