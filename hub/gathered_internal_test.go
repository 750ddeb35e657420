package hub

import (
	"encoding/json"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// However much is offered, gathering allocates about twice the bound at
// most (the buffer's doublings) and never holds more than the bound:
// 2,000 answers of 100 KB, 200 MB, gather into one of 1 MiB.
func TestGatheredBounded(t *testing.T) {
	const (
		limit = 1 << 20
		peers = 2000
	)
	res := json.RawMessage(`"` + strings.Repeat("x", 100_000) + `"`) // one, shared: what is measured is the gathering
	infos := make([]PeerInfo, peers)
	for i := range infos {
		infos[i] = PeerInfo{ID: "peer-" + strconv.Itoa(i), Node: "n1"}
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	g := newGathered(peers, limit, nil)
	for _, info := range infos {
		g.add(info, res, nil)
	}
	answer := g.answer()
	runtime.ReadMemStats(&after)

	if len(answer) > limit || cap(answer) > limit {
		t.Fatalf("answer of %d bytes (capacity %d), over the bound %d", len(answer), cap(answer), limit)
	}
	var got struct {
		Results   []json.RawMessage
		Truncated bool
		Asked     int
	}
	if err := json.Unmarshal(answer, &got); err != nil {
		t.Fatal(err)
	}
	if want := limit / (len(res) + 50); len(got.Results) != want || !got.Truncated || got.Asked != peers {
		t.Fatalf("%d entries (want %d), truncated %v, asked %d", len(got.Results), want, got.Truncated, got.Asked)
	}
	// The buffer's doublings come to 2 MiB, the peers' small encodings
	// to a few KB more: 3 MiB is far below the 200 MB offered.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 3*limit {
		t.Fatalf("gathering allocated %d bytes, want at most %d", alloc, 3*limit)
	}
}

// Nodes that did not answer are named in the answer, which stays within
// its bound: the entries that would not fit beside them are left out.
func TestGatheredUnanswered(t *testing.T) {
	const limit = 200
	g := newGathered(5, limit, []string{"n3", "n4"})
	for i := range 5 {
		g.add(PeerInfo{ID: "peer-" + strconv.Itoa(i), Node: "n1"}, json.RawMessage(`"ok"`), nil)
	}
	answer := g.answer()
	if len(answer) > limit {
		t.Fatalf("answer of %d bytes, over the bound %d: %s", len(answer), limit, answer)
	}
	var got struct {
		Results    []json.RawMessage
		Truncated  bool
		Incomplete bool
		Unanswered []string
	}
	if err := json.Unmarshal(answer, &got); err != nil {
		t.Fatalf("%v: %s", err, answer)
	}
	if !got.Incomplete || strings.Join(got.Unanswered, ",") != "n3,n4" || !got.Truncated || len(got.Results) == 0 {
		t.Fatalf("answer %s: want incomplete, n3 and n4 unanswered, some results, truncated", answer)
	}
	if a := string(newGathered(1, limit, nil).answer()); a != `{"results":[]}` {
		t.Fatalf("answer without entries: %s", a)
	}
}
