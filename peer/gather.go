package peer

import (
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
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
//
// A WebSocket library that reads its messages through a GatherConn (the
// client's, with WebSocketOver) can also have a read that waits for the
// next message interrupted, which a WebSocket library cannot do without
// closing the connection: a Conn whose callers read their own replies
// (Options.CallerReads) needs that when a caller's context ends. The
// GatherConn follows the WebSocket frames it reads for that.
type GatherConn struct {
	net.Conn

	mu   sync.Mutex // held across the underlying writes, for their order
	held bool
	buf  *[]byte // while held; from gatherBufs

	frames  frameTrack  // the frames read, for interrupting; the reader's
	stop    atomic.Bool // interruptRead was called, and no read took it yet
	stopMu  sync.Mutex  // orders interruptRead and the read that takes it
	stopped bool        // the deadline is set in the past; guarded by stopMu
}

// NewGatherConn returns c with writes that can be gathered. What it reads
// is taken to begin with the HTTP response to a WebSocket handshake, as
// on a connection dialed for one.
func NewGatherConn(c net.Conn) *GatherConn {
	return &GatherConn{Conn: c, frames: frameTrack{inHead: true}}
}

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

// errInterrupted is the error of a read interrupted by interruptRead.
var errInterrupted = errors.New("peer: read interrupted")

// Read reads from the connection. A read that interruptRead ends returns
// errInterrupted, but only between two messages: what the WebSocket
// library has read then is whole messages, and it can read the next one
// later as if nothing had happened. In the middle of a message, the read
// goes on (the message is read whole first).
func (c *GatherConn) Read(p []byte) (int, error) {
	for {
		n, err := c.Conn.Read(p)
		c.frames.feed(p[:n])
		if err == nil || !c.stop.Load() || !errors.Is(err, os.ErrDeadlineExceeded) {
			return n, err
		}
		between := c.takeStop()
		switch {
		case n > 0:
			return n, nil
		case between:
			return 0, errInterrupted
		}
	}
}

// takeStop ends an interruption: it clears the deadline interruptRead set
// and reports whether the reading is between two messages.
func (c *GatherConn) takeStop() bool {
	c.stopMu.Lock()
	defer c.stopMu.Unlock()
	c.stop.Store(false)
	if c.stopped {
		c.stopped = false
		_ = c.Conn.SetReadDeadline(time.Time{})
	}
	return c.frames.between()
}

// interruptRead makes the read in progress, or else the next one, return
// errInterrupted once it is between two messages.
func (c *GatherConn) interruptRead() {
	c.stopMu.Lock()
	defer c.stopMu.Unlock()
	c.stop.Store(true)
	c.stopped = true
	_ = c.Conn.SetReadDeadline(time.Unix(1, 0))
}

// frameTrack follows the WebSocket frames of a stream of bytes: where
// each ends, and whether a data message is still going on (RFC 6455,
// section 5.2). With inHead, the frames begin after an HTTP response's
// head, which ends with an empty line.
type frameTrack struct {
	inHead bool
	crlf   int      // bytes of "\r\n\r\n" seen last, in the head
	head   [14]byte // the frame header read so far
	n      int      // its length so far
	left   uint64   // payload bytes of the current frame still to come
	inMsg  bool     // a data message's last frame is still to come
}

// between reports whether the bytes fed so far end a message, or a
// control frame between two messages.
func (f *frameTrack) between() bool { return !f.inHead && f.n == 0 && f.left == 0 && !f.inMsg }

// feed follows b, the bytes that come next.
func (f *frameTrack) feed(b []byte) {
	for f.inHead && len(b) > 0 {
		switch {
		case b[0] == "\r\n\r\n"[f.crlf]:
			f.crlf++
		case b[0] == '\r':
			f.crlf = 1
		default:
			f.crlf = 0
		}
		b = b[1:]
		f.inHead = f.crlf < 4
	}
	for len(b) > 0 {
		if f.left > 0 {
			k := uint64(len(b))
			if k > f.left {
				k = f.left
			}
			f.left -= k
			b = b[k:]
			continue
		}
		f.head[f.n] = b[0]
		f.n++
		b = b[1:]
		if f.n < 2 {
			continue
		}
		size := 2
		if f.head[1]&0x80 != 0 {
			size += 4 // the masking key
		}
		switch f.head[1] & 0x7f {
		case 126:
			size += 2
		case 127:
			size += 8
		}
		if f.n < size {
			continue
		}
		switch n := f.head[1] & 0x7f; n {
		case 126:
			f.left = uint64(f.head[2])<<8 | uint64(f.head[3])
		case 127:
			f.left = 0
			for _, x := range f.head[2:10] {
				f.left = f.left<<8 | uint64(x)
			}
		default:
			f.left = uint64(n)
		}
		if f.head[0]&0x08 == 0 { // a data frame: text, binary, continuation
			f.inMsg = f.head[0]&0x80 == 0
		}
		f.n = 0
	}
}
