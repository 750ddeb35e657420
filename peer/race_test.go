//go:build race

package peer

// The bounds of TestIdleCost under the race detector, whose runtime
// starts goroutines with larger stacks. Measured: 24.7-25.1 KB of stack,
// 19.2-19.5 KB of heap per connection.
const (
	idleStackLimit = 28 << 10
	idleHeapLimit  = 26 << 10
)
