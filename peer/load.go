package peer

// Load is what a connection holds at one moment, for an operator's view
// of it (the hub's admin.peers).
type Load struct {
	Serving int   // calls of the other side being served (in-flight slots taken)
	Calling int   // calls to the other side waiting for their answer, forwarded ones included
	Queued  int64 // bytes waiting to be written
}

// Load returns what the connection holds now.
func (c *Conn) Load() Load {
	c.mu.Lock()
	l := Load{Serving: c.running, Calling: len(c.pending)}
	c.mu.Unlock()
	l.Queued = c.out.bytes.Load()
	return l
}
