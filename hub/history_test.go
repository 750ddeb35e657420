package hub_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/hub"
)

// clock is a clock for the store that moves only when told.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newClock() *clock { return &clock{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func appendN(t *testing.T, s hub.Store, topic string, n int, data string) (first, last uint64) {
	t.Helper()
	for i := range n {
		seq, err := s.Append(topic, []byte(data))
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = seq
		}
		last = seq
	}
	return first, last
}

func read(t *testing.T, s hub.Store, q hub.Query) hub.Page {
	t.Helper()
	p, err := s.Read(q)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func seqs(events []hub.Event) []uint64 {
	out := make([]uint64, len(events))
	for i, e := range events {
		out[i] = e.Seq
	}
	return out
}

func span(from, to uint64) []uint64 {
	var out []uint64
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

func TestStorePositions(t *testing.T) {
	s := hub.NewMemoryStore(nil)
	if s.Last() != 0 || len(s.Epoch()) != 16 {
		t.Fatalf("new store: last %d, epoch %q", s.Last(), s.Epoch())
	}
	if other := hub.NewMemoryStore(nil); other.Epoch() == s.Epoch() {
		t.Fatal("two stores share an epoch")
	}
	appendN(t, s, "a", 2, "1")
	appendN(t, s, "b.x", 2, "2")
	appendN(t, s, "a", 1, "3")
	if s.Last() != 5 {
		t.Fatalf("Last = %d", s.Last())
	}
	for _, tt := range []struct {
		q    hub.Query
		want []uint64
	}{
		{hub.Query{Pattern: "a", Limit: 10}, []uint64{1, 2, 5}},
		{hub.Query{Pattern: "a", After: 1, Limit: 10}, []uint64{2, 5}},
		{hub.Query{Pattern: "a", Limit: 2}, []uint64{1, 2}},
		{hub.Query{Pattern: "a", Limit: 2, Newest: true}, []uint64{2, 5}},
		{hub.Query{Pattern: ">", Limit: 10}, []uint64{1, 2, 3, 4, 5}},
		{hub.Query{Pattern: ">", After: 2, Limit: 2}, []uint64{3, 4}},
		{hub.Query{Pattern: ">", Limit: 2, Newest: true}, []uint64{4, 5}},
		{hub.Query{Pattern: "b.*", Limit: 10}, []uint64{3, 4}},
		{hub.Query{Pattern: "*", After: 4, Limit: 10}, []uint64{5}},
		{hub.Query{Pattern: "c", Limit: 10}, nil},
		{hub.Query{Pattern: "a"}, nil},
	} {
		p := read(t, s, tt.q)
		if got := seqs(p.Events); !slices.Equal(got, tt.want) {
			t.Errorf("%+v: %v, want %v", tt.q, got, tt.want)
		}
		if !p.Complete || p.Last != 5 {
			t.Errorf("%+v: complete %v, last %d", tt.q, p.Complete, p.Last)
		}
	}
	p := read(t, s, hub.Query{Pattern: "b.x", Limit: 1})
	if e := p.Events[0]; e.Topic != "b.x" || string(e.Data) != "2" {
		t.Fatalf("event %+v", e)
	}
}

func TestStoreCountBound(t *testing.T) {
	s := hub.NewMemoryStore(&hub.History{
		Retention: hub.Retention{Events: 10},
		Topics:    []hub.TopicRetention{{Pattern: "big.>", Retention: hub.Retention{Events: 100}}},
	})
	appendN(t, s, "a", 25, "1")
	_, last := appendN(t, s, "big.x", 150, "1")
	appendN(t, s, "b", 5, "1")

	if got := seqs(read(t, s, hub.Query{Pattern: "a", Limit: 100}).Events); !slices.Equal(got, span(16, 25)) {
		t.Fatalf("a holds %v, want its last 10", got)
	}
	if got := read(t, s, hub.Query{Pattern: "big.x", Limit: 1000}).Events; len(got) != 100 || got[99].Seq != last {
		t.Fatalf("big.x holds %d events, want its last 100", len(got))
	}
	if st := s.Stats(); st.Events != 115 || st.Evicted != 65 || st.Topics != 3 {
		t.Fatalf("Stats = %+v", st)
	}
	// Complete only after what was dropped.
	for _, tt := range []struct {
		pattern string
		after   uint64
		want    bool
	}{
		{"a", 14, false}, {"a", 15, true}, {"b", 0, true}, {"*", 14, false}, {"*", 15, true},
		{"big.>", 0, false}, {"big.>", last - 100, true}, {">", 15, false}, {"nothing", 0, true},
	} {
		if got := read(t, s, hub.Query{Pattern: tt.pattern, After: tt.after}).Complete; got != tt.want {
			t.Errorf("complete %s after %d = %v", tt.pattern, tt.after, got)
		}
	}
}

func TestStoreAgeBound(t *testing.T) {
	c := newClock()
	s := hub.NewMemoryStore(&hub.History{
		Now:    c.now,
		Topics: []hub.TopicRetention{{Pattern: "long", Retention: hub.Retention{Age: time.Hour}}},
	})
	appendN(t, s, "a", 3, "1") // 1-3
	appendN(t, s, "long", 1, "1")
	c.advance(5 * time.Minute)
	appendN(t, s, "a", 2, "1") // 5, 6
	c.advance(5*time.Minute + time.Second)

	// The first three are past the default 10 minutes; "long" keeps its.
	if got := seqs(read(t, s, hub.Query{Pattern: ">", Limit: 10}).Events); !slices.Equal(got, []uint64{4, 5, 6}) {
		t.Fatalf("held %v", got)
	}
	if p := read(t, s, hub.Query{Pattern: "a", After: 2}); p.Complete {
		t.Fatal("complete after expired events")
	}
	c.advance(5 * time.Minute)
	if st := s.Stats(); st.Events != 1 || st.Evicted != 5 || st.Topics != 1 {
		t.Fatalf("Stats = %+v", st)
	}
	// An expired event behind a younger one of another topic is not read.
	appendN(t, s, "a", 1, "1") // 7
	c.advance(11 * time.Minute)
	if got := seqs(read(t, s, hub.Query{Pattern: "*", Limit: 10}).Events); !slices.Equal(got, []uint64{4}) {
		t.Fatalf("held %v, want only long's", got)
	}
	if got := read(t, s, hub.Query{Pattern: "a", Limit: 10}).Events; len(got) != 0 {
		t.Fatalf("a holds %v", seqs(got))
	}
}

func TestStoreBytesBound(t *testing.T) {
	data := strings.Repeat("x", 1000)
	s := hub.NewMemoryStore(&hub.History{
		Retention: hub.Retention{Bytes: 10_000},
		MaxBytes:  25_000,
	})
	appendN(t, s, "a", 50, data)
	held := read(t, s, hub.Query{Pattern: "a", Limit: 100}).Events
	if n := len(held); n < 5 || n > 9 || held[n-1].Seq != 50 {
		t.Fatalf("a holds %d events, want the newest that fit in 10 000 bytes", n)
	}
	if st := s.Stats(); st.Bytes > 10_000 {
		t.Fatalf("topic over its bound: %+v", st)
	}
	for i := range 5 {
		appendN(t, s, fmt.Sprint("t", i), 9, data)
	}
	if st := s.Stats(); st.Bytes > 25_000 || st.Bytes < 20_000 {
		t.Fatalf("all topics: %+v, want at most 25 000 bytes", st)
	}
	// The oldest go first, whatever their topic.
	if p := read(t, s, hub.Query{Pattern: "a"}); p.Complete {
		t.Fatal("a still complete")
	}
	if got := read(t, s, hub.Query{Pattern: "t4", Limit: 100}).Events; len(got) == 0 {
		t.Fatal("the newest topic lost everything")
	}
	// An event bigger than its topic's bound is not kept.
	appendN(t, s, "huge", 1, strings.Repeat("x", 20_000))
	if p := read(t, s, hub.Query{Pattern: "huge", Limit: 1}); len(p.Events) != 0 || p.Complete {
		t.Fatalf("huge: %d events, complete %v", len(p.Events), p.Complete)
	}
}

func TestStoreOff(t *testing.T) {
	s := hub.NewMemoryStore(&hub.History{
		Topics: []hub.TopicRetention{{Pattern: "ticks.>", Retention: hub.Retention{Off: true}}},
	})
	appendN(t, s, "news", 1, "1")
	appendN(t, s, "ticks.a", 3, "1")
	if s.Last() != 4 {
		t.Fatalf("Last = %d: unkept events still take positions", s.Last())
	}
	if p := read(t, s, hub.Query{Pattern: "ticks.a", Limit: 10}); len(p.Events) != 0 || p.Complete {
		t.Fatalf("ticks.a: %v, complete %v", seqs(p.Events), p.Complete)
	}
	for _, tt := range []struct {
		pattern string
		after   uint64
		want    bool
	}{{"news", 0, true}, {"*", 0, true}, {">", 0, false}, {"ticks.*", 3, false}, {"ticks.*", 4, true}} {
		if got := read(t, s, hub.Query{Pattern: tt.pattern, After: tt.after}).Complete; got != tt.want {
			t.Errorf("complete %s after %d = %v", tt.pattern, tt.after, got)
		}
	}
	all := hub.NewMemoryStore(&hub.History{Retention: hub.Retention{Off: true}})
	appendN(t, all, "x", 1, "1")
	if st := all.Stats(); st.Events != 0 || read(t, all, hub.Query{Pattern: "y"}).Complete {
		t.Fatalf("history off: %+v", st)
	}
}

// TestStoreForgetsIdleTopics: topics that hold nothing any more are
// remembered up to a bound, then forgotten, and recovery from before
// what they dropped reports incomplete rather than guess.
func TestStoreForgetsIdleTopics(t *testing.T) {
	c := newClock()
	s := hub.NewMemoryStore(&hub.History{Now: c.now})
	const topics = 10_000
	for i := range topics {
		appendN(t, s, fmt.Sprint("t", i), 1, "1")
	}
	c.advance(time.Hour)
	after := s.Last()
	appendN(t, s, "keep", 1, "1")
	if st := s.Stats(); st.Events != 1 || st.Topics != 1 {
		t.Fatalf("Stats = %+v", st)
	}
	if !read(t, s, hub.Query{Pattern: "keep", After: after}).Complete {
		t.Fatal("keep incomplete after its own start")
	}
	if read(t, s, hub.Query{Pattern: "t1", After: 0}).Complete {
		t.Fatal("t1 complete after its event was dropped")
	}
}

// TestStoreMemory fills a store, lets it all expire, and checks that the
// heap returns to where it was.
func TestStoreMemory(t *testing.T) {
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	c := newClock()
	s := hub.NewMemoryStore(&hub.History{Now: c.now, MaxBytes: 32 << 20})
	base := heap()
	data := strings.Repeat("y", 500)
	for i := range 100_000 {
		if _, err := s.Append(fmt.Sprint("topic.", i%500), []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	full := heap()
	st := s.Stats()
	if st.Bytes > 32<<20 || st.Events == 0 {
		t.Fatalf("Stats = %+v", st)
	}
	if grown := full - base; grown < uint64(st.Bytes)/2 || grown > 2*uint64(st.Bytes) {
		t.Errorf("heap grew %d bytes for %d counted: the count is off", grown, st.Bytes)
	}
	c.advance(time.Hour)
	if st := s.Stats(); st.Events != 0 || st.Bytes != 0 {
		t.Fatalf("after expiry: %+v", st)
	}
	if after := heap(); after > base+1<<20 {
		t.Fatalf("heap %d after expiry, %d before filling (%d full)", after, base, full)
	}
	runtime.KeepAlive(s)
}

// TestHistoryHeapManyTopics: with one event per topic, the heap the
// history holds stays within 1.2 times MaxBytes, as with many events per
// topic: the estimate counts each topic's own memory.
func TestHistoryHeapManyTopics(t *testing.T) {
	const maxBytes = 16 << 20
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	h := hub.New(&hub.Options{Policy: hub.AllowAll, History: hub.History{MaxBytes: maxBytes}})
	for i := range 150_000 {
		if _, err := h.Publish(context.Background(), "t."+strconv.Itoa(i), json.RawMessage(strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	used := heap() - before
	st := h.Store().Stats()
	runtime.KeepAlive(h)
	if st.Evicted == 0 {
		t.Fatalf("nothing evicted: %+v; the test needs more topics than fit", st)
	}
	if limit := uint64(maxBytes) * 12 / 10; used > limit {
		t.Fatalf("heap grew by %d bytes holding %d topics of one event, over 1.2 x %d", used, st.Topics, maxBytes)
	}
}
