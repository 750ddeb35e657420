package transport

import (
	"errors"
	"os"
	"time"
)

// This file holds the other half of a Conn the client package dials: a
// read that waits for the next WebSocket message can be interrupted, which
// a WebSocket library cannot do without closing the connection. A
// peer.Conn whose caller reads its own reply (see peer's own.go) needs
// that when the caller's context ends: the caller must stop reading, and a
// reader goroutine take over, on the same connection.
//
// Interrupt sets a read deadline in the past. The read it ends returns
// ErrInterrupted only between two messages: what the WebSocket library has
// read then is whole messages, and its next read of a frame header starts
// afresh. coder/websocket passes the error up and reads the next message
// as if nothing had happened, although its documentation says that "on
// any error from any method, the connection is closed": TestInterruptHeader
// holds the version in go.mod to what this relies on. In the middle of a
// message, the read goes on until the message is whole.

// ErrInterrupted is the error of a read that Interrupt ended.
var ErrInterrupted = errors.New("transport: read interrupted")

// Read reads from the connection, following the WebSocket frames it reads
// for Interrupt: a read that Interrupt ended returns ErrInterrupted, but
// only between two messages; in the middle of a message, it goes on.
func (c *Conn) Read(p []byte) (int, error) {
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
			return 0, ErrInterrupted
		}
	}
}

// takeStop ends an interruption: it clears the deadline Interrupt set
// and reports whether the reading is between two messages.
func (c *Conn) takeStop() bool {
	c.stopMu.Lock()
	defer c.stopMu.Unlock()
	c.stop.Store(false)
	if c.stopped {
		c.stopped = false
		_ = c.Conn.SetReadDeadline(time.Time{})
	}
	return c.frames.between()
}

// Interrupt makes the read in progress, or else the next one, return
// ErrInterrupted once it is between two messages. It may be called from
// any goroutine.
func (c *Conn) Interrupt() {
	c.stopMu.Lock()
	defer c.stopMu.Unlock()
	c.stop.Store(true)
	c.stopped = true
	_ = c.Conn.SetReadDeadline(time.Unix(1, 0))
}

// frameTrack follows the WebSocket frames of a stream of bytes: where
// each ends, and whether a data message is still going on. With inHead,
// the frames begin after an HTTP response's head, which ends with an
// empty line.
type frameTrack struct {
	inHead bool
	crlf   int                // bytes of "\r\n\r\n" seen last, in the head
	head   [MaxHeaderLen]byte // the frame header read so far
	n      int                // its length so far
	left   uint64             // payload bytes of the current frame still to come
	inMsg  bool               // a data message's last frame is still to come
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
			k := min(uint64(len(b)), f.left)
			f.left -= k
			b = b[k:]
			continue
		}
		k := copy(f.head[f.n:], b)
		h, size, ok := ParseHeader(f.head[:f.n+k])
		if !ok {
			// The header is longer than what came: all of b is in head.
			f.n += k
			return
		}
		b = b[size-f.n:]
		f.n = 0
		f.left = h.Length
		if !h.Control() { // a data frame: text, binary, continuation
			f.inMsg = !h.Fin
		}
	}
}
