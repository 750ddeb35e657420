//go:build race

package peer

// The bounds of TestBatchCost under the race detector, whose pools drop
// a quarter of what they are given (a new decoding buffer then) and
// whose runtime allocates more. Measured: 6.5-7.5 allocations and
// 37,800-41,400 bytes per batch.
const (
	batchAllocLimit = 9
	batchBytesLimit = 48 << 10
)
