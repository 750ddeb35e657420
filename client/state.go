package client

import "fmt"

// State is the state of a Client's connection.
type State int

const (
	StateConnecting   State = iota // dialing, or re-subscribing after a dial
	StateConnected                 // calls go through
	StateDisconnected              // the connection dropped or an attempt failed; waiting to retry
	StateClosed                    // closed for good (Close, or the client gave up)
)

func (s State) String() string {
	switch s {
	case StateConnecting:
		return "connecting"
	case StateConnected:
		return "connected"
	case StateDisconnected:
		return "disconnected"
	case StateClosed:
		return "closed"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// setState records s and queues it for Options.OnState. Nothing follows
// StateClosed.
func (c *Client) setState(s State, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state == StateClosed {
		return
	}
	c.state = s
	if c.o.OnState == nil {
		return
	}
	c.changes = append(c.changes, stateChange{s, err})
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

type stateChange struct {
	s   State
	err error
}

// notify calls OnState with each change, in order, on a goroutine of its
// own, so that OnState may call the client and never holds up the
// reconnection. It returns after reporting StateClosed.
func (c *Client) notify() {
	for range c.changed {
		c.mu.Lock()
		changes := c.changes
		c.changes = nil
		c.mu.Unlock()
		for _, ch := range changes {
			c.o.OnState(ch.s, ch.err)
			if ch.s == StateClosed {
				return
			}
		}
	}
}

// State returns the current state of the connection.
func (c *Client) State() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}
