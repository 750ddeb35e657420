package natsbroker

import "time"

// Updated returns a channel closed when b next hears from another node,
// or takes one for gone: for tests that wait for the nodes to learn about
// each other.
func Updated(b *Broker) <-chan struct{} {
	d := b.dir.Load()
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.updated
}

// SetDiscoverWait sets how long a node waits for the others to describe
// their providers, until the test ends.
func SetDiscoverWait(t interface{ Cleanup(func()) }, wait time.Duration) {
	old := discoverWait
	discoverWait = wait
	t.Cleanup(func() { discoverWait = old })
}
