//go:build !race

package peer

// The bounds of TestIdleCost. Measured: 12.5 KB of stack (two goroutines:
// the reader, and one of the WebSocket library's), 19.4-19.9 KB of heap
// per connection.
const (
	idleStackLimit = 14 << 10
	idleHeapLimit  = 26 << 10
)
