package natsbroker

import (
	"maps"
	"time"
)

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

// RosterOf returns the peers of each user on node as b knows them, and
// whether b knows node's roster at all.
func RosterOf(b *Broker, node string) (users map[string]int, known bool) {
	d := b.dir.Load()
	d.mu.Lock()
	defer d.mu.Unlock()
	m := d.members[node]
	if m == nil || m.roster == nil {
		return nil, false
	}
	return maps.Clone(m.roster.Users), true
}
