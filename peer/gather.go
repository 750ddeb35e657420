package peer

import (
	"net"
	"sync"
)

// GatherConn is a network connection whose writes can be gathered: between
// Hold and Flush, what is written to it is kept, and Flush sends it in one
// write. A WebSocket library writes each message with a system call of its
// own (coder/websocket flushes its buffer at the end of every message);
// over a GatherConn, a Conn that has several messages to send (the
// replies to the calls of one read, the events queued for a busy
// subscriber, the calls of many goroutines at once) sends them with one.
// [AcceptWebSocket] sets one up on a server; a client dials its
// connection, wraps it with NewGatherConn (an http.Transport's
// DialContext can), and passes it to [WebSocketOver].
//
// Writes between Hold and Flush succeed at once, and an error of the
// connection comes from Flush. Held bytes are sent early, still in one
// write, when they pass 64 KiB, so a large message is not copied whole.
// Writes made while another goroutine holds (a WebSocket library's pong,
// or its close frame) join the held bytes, in order. Only a Conn's
// outbound queue calls Hold and Flush.
type GatherConn struct {
	net.Conn

	mu   sync.Mutex // held across the underlying writes, for their order
	held bool
	buf  *[]byte // while held; from gatherBufs
}

// NewGatherConn returns c with writes that can be gathered.
func NewGatherConn(c net.Conn) *GatherConn { return &GatherConn{Conn: c} }

// gatherLimit is how many held bytes Write keeps before sending them.
const gatherLimit = 64 << 10

var gatherBufs = sync.Pool{New: func() any { b := make([]byte, 0, 8<<10); return &b }}

// Write writes p, or keeps it while writes are held.
func (c *GatherConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	if !c.held {
		n, err := c.Conn.Write(p)
		c.mu.Unlock()
		return n, err
	}
	n, err := c.keepLocked(p)
	c.mu.Unlock()
	return n, err
}

// keepLocked adds p to the held bytes, with c.mu held, and sends them
// once they pass gatherLimit.
func (c *GatherConn) keepLocked(p []byte) (int, error) {
	if c.buf == nil {
		c.buf = gatherBufs.Get().(*[]byte)
	}
	*c.buf = append(*c.buf, p...)
	if len(*c.buf) >= gatherLimit {
		if err := c.sendLocked(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Hold keeps what is written from now on, until Flush.
func (c *GatherConn) Hold() {
	c.mu.Lock()
	c.held = true
	c.mu.Unlock()
}

// Flush sends what was kept since Hold, in one write, and ends the hold.
func (c *GatherConn) Flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held = false
	err := c.sendLocked()
	if c.buf != nil {
		if cap(*c.buf) <= gatherLimit*2 {
			*c.buf = (*c.buf)[:0]
			gatherBufs.Put(c.buf)
		}
		c.buf = nil
	}
	return err
}

// sendLocked writes the held bytes, with c.mu held, and empties the
// buffer.
func (c *GatherConn) sendLocked() error {
	if c.buf == nil || len(*c.buf) == 0 {
		return nil
	}
	_, err := c.Conn.Write(*c.buf)
	*c.buf = (*c.buf)[:0]
	return err
}
