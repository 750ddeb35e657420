package main

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

func TestHeapFloorPercent(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		base int
		live uint64
		want int
	}{
		{100, 0, 800},        // nothing collected yet: Go's minimum goal at the floor
		{100, 1 * mib, 800},  // never above that
		{100, 8 * mib, 300},  // the goal at 32 MiB
		{100, 16 * mib, 100}, // GOGC's own goal reaches the floor
		{100, 64 * mib, 100},
		{50, 20 * mib, 60},
		{50, 30 * mib, 50},
		{1000, 1 * mib, 1000}, // never below GOGC
	} {
		f := &heapFloor{min: 32 * mib, base: tc.base}
		if got := f.percentFor(tc.live); got != tc.want {
			t.Errorf("GOGC=%d, %d MiB live: percent %d, want %d", tc.base, tc.live/mib, got, tc.want)
		}
	}
}

// TestHeapFloor checks the floor against the real collector: GOGC is
// raised while little is live, set back while much is, and restored when
// the floor stops.
func TestHeapFloor(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	const floor = 16 << 20
	runtime.GC() // the live heap the floor starts from is this test's, not what an earlier test held
	f := newHeapFloor(floor)
	tuned := make(chan int, 64)
	f.onTune = func(p int) {
		select {
		case tuned <- p:
		default: // the test reads after each collection
		}
	}
	f.start()
	defer f.stop()
	if p := <-tuned; p <= 100 || gcPercent() != p {
		t.Fatalf("at start: tuned to %d, GOGC %d; want above 100", p, gcPercent())
	}

	// collect runs a collection and returns the percent the floor then set.
	collect := func() int {
		t.Helper()
		for len(tuned) > 0 {
			<-tuned // set before the heap changed
		}
		runtime.GC()
		return testkit.Recv(t, tuned, "a tuning after a collection")
	}
	if p := collect(); p <= 100 || gcPercent() != p {
		t.Fatalf("little live: tuned to %d, GOGC %d; want above 100", p, gcPercent())
	}
	held := make([]byte, 2*floor)
	if p := collect(); p != 100 || gcPercent() != 100 {
		t.Fatalf("%d MiB live: tuned to %d, GOGC %d; want 100", len(held)>>20, p, gcPercent())
	}
	runtime.KeepAlive(held)
	if p := collect(); p <= 100 {
		t.Fatalf("after letting go: tuned to %d; want above 100", p)
	}

	f.stop()
	if p := gcPercent(); p != 100 {
		t.Fatalf("after stop: GOGC %d, want 100", p)
	}
	runtime.GC()
	runtime.GC()
	if p := gcPercent(); p != 100 {
		t.Fatalf("collections after stop: GOGC %d, want 100", p)
	}
}

func TestHeapFloorOff(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	if f := newHeapFloor(32 << 20); f != nil {
		t.Fatal("a floor with GOGC off")
	}
	debug.SetGCPercent(100)
	if f := newHeapFloor(0); f != nil {
		t.Fatal("a floor of 0 bytes")
	}
	startHeapFloor(0)()
	if p := gcPercent(); p != 100 {
		t.Fatalf("GOGC %d after a floor of 0, want 100", p)
	}
}

func gcPercent() int { return int(int64(readMetric("/gc/gogc:percent"))) }
