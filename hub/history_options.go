package hub

import "time"

// This file holds the bounds of the history that a hub's Options set
// (History, Retention) and how a topic's are completed by the defaults.

// Retention bounds the history of a topic. Zero fields take the defaults
// (or, in History.Topics, the hub-wide Retention's values); a negative
// field lifts its bound.
type Retention struct {
	Events int           // keep the newest this many events. Default 1000.
	Age    time.Duration // drop events older than this. Default 10 minutes.
	Bytes  int           // keep the newest events up to this many bytes. Default 16 MiB.
	Off    bool          // keep nothing: the topic has no history and cannot be recovered
}

// TopicRetention is the Retention of the topics matching Pattern.
type TopicRetention struct {
	Pattern string
	Retention
}

// History configures the in-memory store. The zero value keeps, for
// every topic, its last 1000 events of the last 10 minutes, and at most
// 64 MiB for all topics together.
type History struct {
	// Retention bounds every topic's history, except topics matched by
	// a pattern of Topics.
	Retention
	// Topics overrides Retention for the topics matching a pattern; the
	// first pattern that matches wins. An invalid pattern matches nothing.
	Topics []TopicRetention
	// MaxBytes bounds the history of all topics together: when it is
	// over, the oldest events go first, whatever their topic. Default
	// 64 MiB; negative: no bound but the topics' own.
	MaxBytes int64
	// Now is the clock that dates events, for tests. Default time.Now.
	Now func() time.Time
}

// Defaults of History and Retention.
const (
	DefaultHistoryEvents = 1000
	DefaultHistoryAge    = 10 * time.Minute
	DefaultHistoryBytes  = 16 << 20
	DefaultHistoryTotal  = 64 << 20
)

const (
	// eventOverhead estimates the memory an event takes beyond its data
	// and topic: its entry, the slots that index it, and the envelope of
	// the encoded message its data shares an array with.
	eventOverhead = 192

	// topicOverhead estimates the memory a topic holding events takes
	// beyond them: its log, its name and its slot in the map of topics
	// (measured: about 200 bytes; the map grows by doubling). It is
	// counted while the topic holds an event, so that a history of one
	// event per topic stays within MaxBytes as one of many events does.
	topicOverhead = 256

	// maxIdleTopics bounds the topics remembered after their last event
	// was dropped; beyond it the oldest are forgotten, and recovery from
	// a position before what they dropped reports incomplete.
	maxIdleTopics = 4096
)

// withDefaults returns r with its zero fields taken from d.
func (r Retention) withDefaults(d Retention) Retention {
	if r.Off {
		return Retention{Off: true}
	}
	if r.Events == 0 {
		r.Events = d.Events
	}
	if r.Age == 0 {
		r.Age = d.Age
	}
	if r.Bytes == 0 {
		r.Bytes = d.Bytes
	}
	return r
}
