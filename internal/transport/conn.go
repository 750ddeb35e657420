// Package transport holds what a peer.Conn's WebSocket transport can do
// beyond carrying messages, for packages peer and client, which both build
// one: the capabilities a transport declares (Caps), read once by
// peer.NewConn; a network connection whose writes can be gathered into
// one system call and whose reads can be interrupted between two messages
// (Conn); and the parser of WebSocket frame headers both read frames with
// (ParseHeader). Nothing here is meant for users: it is how the project's
// own packages coax the scheduler and the kernel, measured in docs/peer.md.
package transport

import (
	"net"
	"sync"
	"sync/atomic"
)

// Conn is a network connection whose writes can be gathered: between
// Hold and Flush, what is written to it is kept, and Flush sends it in one
// write. A WebSocket library writes each message with a system call of its
// own (coder/websocket flushes its buffer at the end of every message);
// over a Conn, a peer.Conn that has several messages to send (the
// replies to the calls of one read, the events queued for a busy
// subscriber, the calls of many goroutines at once) sends them with one.
// peer.AcceptWebSocket sets one up on a server; the client package dials
// its connection and wraps it with New (in its http.Transport's
// DialContext), and declares it in its transport's [Caps].
//
// Writes between Hold and Flush succeed at once, and an error of the
// connection comes from Flush. Held bytes are sent early, still in one
// write, when they pass 64 KiB, so a large message is not copied whole.
// Writes made while another goroutine holds (a WebSocket library's pong,
// or its close frame) join the held bytes, in order. Only a Conn's
// outbound queue calls Hold and Flush.
type Conn struct {
	net.Conn

	mu   sync.Mutex // held across the underlying writes, for their order
	held bool
	buf  *[]byte // while held; from gatherBufs

	// For Interrupt (interrupt.go): the frames read, which belong to
	// the goroutine reading; the interruption asked for and not yet taken
	// by a read; and whether the deadline is set in the past, under
	// stopMu, which orders Interrupt and the read that takes it.
	frames  frameTrack
	stop    atomic.Bool
	stopMu  sync.Mutex
	stopped bool
}

// New returns c with writes that can be gathered. What it reads is taken
// to begin with the HTTP response to a WebSocket handshake, as on a
// connection dialed for one (see Interrupt); on a served connection, the
// WebSocket library does not read through it.
func New(c net.Conn) *Conn { return &Conn{Conn: c, frames: frameTrack{inHead: true}} }

// gatherLimit is how many held bytes Write keeps before sending them.
const gatherLimit = 64 << 10

var gatherBufs = sync.Pool{New: func() any { b := make([]byte, 0, 8<<10); return &b }}

// Write writes p, or keeps it while writes are held.
func (c *Conn) Write(p []byte) (int, error) {
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
func (c *Conn) keepLocked(p []byte) (int, error) {
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
func (c *Conn) Hold() {
	c.mu.Lock()
	c.held = true
	c.mu.Unlock()
}

// Flush sends what was kept since Hold, in one write, and ends the hold.
func (c *Conn) Flush() error {
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
func (c *Conn) sendLocked() error {
	if c.buf == nil || len(*c.buf) == 0 {
		return nil
	}
	_, err := c.Conn.Write(*c.buf)
	*c.buf = (*c.buf)[:0]
	return err
}
