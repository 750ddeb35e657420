//go:build !race

package peer

// The bounds of TestBatchCost. Measured: 5.04 allocations and 29,030
// bytes per batch; before the calls fitted the 16 KiB size class and
// the decoding buffer went back to its pool under its own pointer, 5.97
// and 30,880.
const (
	batchAllocLimit = 5.5
	batchBytesLimit = 30 << 10
)
