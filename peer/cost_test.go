package peer

import (
	"math"
	"runtime"
	"testing"
)

// TestBatchCost pins what a connection allocates to serve the load
// generator's batch of 100 echo calls, read, run and answered: the frame
// (the transport's), the batch, its calls, its reply array and its ids'
// string, in five allocations. The calls are one array: 100 of them fit
// the allocator's 16 KiB size class (a call of 168 bytes or more would
// take the 18 KiB one), and the decoding buffer goes back to its pool
// under the pointer it came in. Under the race detector, whose pools
// drop a quarter of what they are given, the bounds are looser (see
// cost_race_test.go).
//
// The counts are the process's: whatever else runs meanwhile (a writer
// goroutine that has not ended yet when the next starts, on a loaded
// machine, takes a new one) only adds to them. So the test keeps the
// least of five measurements, which is the connection's own cost.
func TestBatchCost(t *testing.T) {
	frame := batchFrame(100, "echo", "[1]")
	cost := func(n int) (allocs, bytes uint64) {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if got := serveFrames(t, frame, n); got != int64(n)*100 {
			t.Fatalf("served %d requests in %d batches", got, n)
		}
		runtime.ReadMemStats(&after)
		return after.Mallocs - before.Mallocs, after.TotalAlloc - before.TotalAlloc
	}
	cost(10) // the pools fill
	allocs, bytes := math.Inf(1), math.Inf(1)
	for range 5 {
		a1, b1 := cost(100)
		a2, b2 := cost(300)
		allocs, bytes = min(allocs, float64(a2-a1)/200), min(bytes, float64(b2-b1)/200)
	}
	t.Logf("per batch: %.2f allocations, %.0f bytes (the least of five measurements)", allocs, bytes)
	if allocs > batchAllocLimit {
		t.Errorf("a batch of 100 calls costs %.2f allocations, want at most %v", allocs, batchAllocLimit)
	}
	if bytes > batchBytesLimit {
		t.Errorf("a batch of 100 calls costs %.0f bytes, want at most %d", bytes, batchBytesLimit)
	}
}
