//go:build race

package peer

// The bounds of TestBatchCost under the race detector, whose pools drop
// a quarter of what they are given at random (a new decoding buffer
// then) and whose runtime allocates more, so that the count per batch
// varies from run to run: measured 6.5-9.1 allocations and 37,800-41,600
// bytes per batch. These bounds catch an allocation per call (100 more
// per batch); the exact ones (cost_norace_test.go) are checked by a run
// without the race detector, which make test does too.
const (
	batchAllocLimit = 15
	batchBytesLimit = 48 << 10
)
