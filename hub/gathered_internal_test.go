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
	g := newGathered(peers, limit)
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
