package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// A hub with few connections keeps little memory live: a megabyte or
// two. Go's collector then runs every 4 MB allocated (GOGC=100), and a
// hub busy serving calls allocates that in a fraction of a second: a
// hundred collections a second under batches. On a small machine, each
// collection costs far more than its own work, which shows as more thread
// wake-ups (futex calls) and context switches per call. With 10 allocations of 64 bytes per
// call, a raw WebSocket server answers sequential calls 30 to 40% slower
// than with none, and as fast as with none once the collector runs every
// 32 MB instead (docs/benchmarks.md).
//
// The heap floor lets the heap grow to a minimum before the collector
// runs, whatever is live: after each collection, GOGC is raised so that
// the next one comes when the heap reaches the floor, or at GOGC's own
// goal when that is higher. A hub holding more than half the floor live
// runs with GOGC as set. A memory limit (GOMEMLIMIT) still applies.

// defaultMinHeapMB is -min-heap-mb's default.
const defaultMinHeapMB = 32

// heapFloor keeps the heap goal at min bytes at least. See startHeapFloor.
type heapFloor struct {
	min  uint64
	base int // GOGC as it was set when the floor started

	mu      sync.Mutex
	stopped bool
	percent int       // what the floor last set
	onTune  func(int) // for tests: told of each percent set
}

// heapFloorRunning is whether a floor runs in this process: there is one
// collector, so one floor (tests start several hubs in one process).
var heapFloorRunning struct {
	sync.Mutex
	on bool
}

// startHeapFloor keeps the heap goal at minBytes at least until stop is
// called, which sets GOGC back. It does nothing when minBytes is 0, when
// GOGC is off, or when a floor runs already.
func startHeapFloor(minBytes uint64) (stop func()) {
	f := newHeapFloor(minBytes)
	if f == nil {
		return func() {}
	}
	heapFloorRunning.Lock()
	defer heapFloorRunning.Unlock()
	if heapFloorRunning.on {
		return func() {}
	}
	heapFloorRunning.on = true
	f.start()
	return func() {
		f.stop()
		heapFloorRunning.Lock()
		heapFloorRunning.on = false
		heapFloorRunning.Unlock()
	}
}

// newHeapFloor returns a floor of minBytes, not started, or nil when
// there is nothing to keep: minBytes is 0, or GOGC is off.
func newHeapFloor(minBytes uint64) *heapFloor {
	base := int(int64(readMetric("/gc/gogc:percent"))) // -1: off
	if minBytes == 0 || base <= 0 {
		return nil
	}
	return &heapFloor{min: minBytes, base: base, percent: base}
}

// start sets GOGC for the heap live now and again after every collection.
func (f *heapFloor) start() {
	f.tune()
	f.arm()
}

// stop ends the tuning and sets GOGC back.
func (f *heapFloor) stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopped = true
	debug.SetGCPercent(f.base)
}

// arm has tune called after the next collection: the collector finds the
// object unreachable and runs its finalizer, which arms a new one.
func (f *heapFloor) arm() {
	s := &gcSentinel{}
	runtime.SetFinalizer(s, func(*gcSentinel) {
		if f.tune() {
			f.arm()
		}
	})
}

// gcSentinel is an object only its finalizer refers to. It holds a
// pointer so that it is not a tiny allocation, which the collector frees
// with others in one block.
type gcSentinel struct{ _ *byte }

// tune sets GOGC so that the next collection comes at the floor, or at the
// base GOGC's goal if that is higher, for the heap the last collection
// found live. It reports false once the floor stopped.
func (f *heapFloor) tune() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return false
	}
	p := f.percentFor(readMetric("/gc/heap/live:bytes"))
	if p != f.percent {
		debug.SetGCPercent(p)
		f.percent = p
	}
	if f.onTune != nil {
		f.onTune(p)
	}
	return true
}

// goMinHeap is the heap goal of Go's collector at GOGC=100 when almost
// nothing is live: at GOGC=p, the goal is at least goMinHeap*p/100.
const goMinHeap = 4 << 20

// percentFor is the GOGC that puts the heap goal at the floor for live
// bytes live, but never below the base GOGC, and never above what puts
// Go's own minimum goal at the floor: with nothing live yet (before the
// first collection), that minimum is the goal.
func (f *heapFloor) percentFor(live uint64) int {
	most := int(f.min * 100 / goMinHeap)
	if live == 0 {
		return max(most, f.base)
	}
	return max(f.base, min(most, int(f.min*100/live)-100))
}

// readMetric reads a runtime metric of kind uint64.
func readMetric(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
