package peer

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/coder/websocket"
	"github.com/switchboard-rpc/switchboard/internal/transport"
)

// WebSocket adapts a *websocket.Conn (github.com/coder/websocket) to a
// Transport. Text and binary messages are both read as JSON; messages are
// written as text. Set the read limit on ws (SetReadLimit) to
// Options.MaxMessage: the WebSocket library then closes with 1009 itself.
func WebSocket(ws *websocket.Conn) Transport { return &wsTransport{ws: ws} }

// wsTransport is a WebSocket. gc, br and pings are set when it was
// accepted with AcceptWebSocket: the network connection, the buffered
// reader the WebSocket library reads it with, and the pings written by
// writePing and waiting for their pong, by payload.
type wsTransport struct {
	ws *websocket.Conn
	gc *transport.Conn
	br *bufio.Reader
	// closing is held by Close: the library's close handshake reads br,
	// which messageWaiting must not look at meanwhile.
	closing sync.Mutex
	closed  atomic.Bool // Close was called: no more pings
	pings   *pings
}

// Capabilities declares what the WebSocket can do: an accepted one
// gathers its writes, tells the reader when its next message is read
// already, and writes its own pings; any can ping with the library's
// Ping. (The client package adds what a WebSocket it dialed can do.)
func (t *wsTransport) Capabilities() transport.Caps {
	k := transport.Caps{Ping: t.Ping}
	if t.gc != nil {
		k.Gather = t.gc
		k.MessageWaiting = t.messageWaiting
		k.ExpectPong, k.WritePing = t.pings.expect, t.writePing
	}
	return k
}

// AcceptWebSocket accepts a WebSocket handshake, as websocket.Accept
// does with opts, and returns the connection and a Transport over it
// that writes the messages a Conn has ready together with one system
// call: the replies to the calls that came in one read, or the events
// queued for a busy subscriber. [WebSocket] writes each with a system
// call of its own, since the WebSocket library flushes every message.
// The messages are not delayed: the reader holds its replies back only
// while the next call is read already (see the package documentation).
//
// A Conn over it sends its pings (see [Conn.Ping]) behind the messages
// queued before them, as the writer reaches them, rather than with the
// library's Ping: the library gives a ping frame 5 s to be written, and
// closes the connection when that passes, which a peer that reads its
// messages slowly would make it do. opts.OnPongReceived, if set, is
// called as well.
func AcceptWebSocket(w http.ResponseWriter, r *http.Request, opts *websocket.AcceptOptions) (Transport, *websocket.Conn, error) {
	gw := &gatherWriter{ResponseWriter: w}
	t := &wsTransport{pings: new(pings)}
	o := websocket.AcceptOptions{}
	if opts != nil {
		o = *opts
	}
	onPong := o.OnPongReceived
	o.OnPongReceived = func(ctx context.Context, payload []byte) {
		t.pings.pong(payload)
		if onPong != nil {
			onPong(ctx, payload)
		}
	}
	ws, err := websocket.Accept(gw, r, &o)
	if err != nil {
		return nil, nil, err
	}
	t.ws, t.gc, t.br = ws, gw.conn, gw.br
	return t, ws, nil
}

// gatherWriter is the ResponseWriter a WebSocket is accepted through: it
// hands the WebSocket library the hijacked connection wrapped in a
// transport.Conn, and keeps the buffered reader the library reads it with.
type gatherWriter struct {
	http.ResponseWriter
	conn *transport.Conn
	br   *bufio.Reader
}

func (w *gatherWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *gatherWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	nc, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	// The library writes through brw.Writer, empty now: it writes to the
	// transport.Conn instead. It reads nc itself, through brw.Reader:
	// the reader, parked there while the connection is idle, has no frame
	// of the transport.Conn's on its stack (see TestIdleCost).
	w.conn = transport.New(nc)
	brw.Writer.Reset(w.conn)
	w.br = brw.Reader
	return nc, brw, nil
}

// messageWaiting reports whether a whole data message (a text or binary
// frame, final) is read and buffered already: reading it needs no
// system call, and cannot wait for the other side. A close frame does not
// count: the WebSocket library answers it as it reads it, which must not
// overtake replies held back. Only the reader may call it; while Close
// runs, it reports false.
func (t *wsTransport) messageWaiting() bool {
	if !t.closing.TryLock() {
		return false // closing: nothing more will be read
	}
	defer t.closing.Unlock()
	n := t.br.Buffered()
	b, _ := t.br.Peek(min(n, transport.MaxHeaderLen)) // buffered: no read
	h, size, ok := transport.ParseHeader(b)
	return ok && h.Fin && h.Data() && h.Length <= uint64(n-size)
}

// pings are the pings waiting for their pong.
type pings struct {
	mu      sync.Mutex
	next    uint64
	waiting map[string]chan struct{}
}

func (ps *pings) expect() ([]byte, <-chan struct{}, func()) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.next++
	p := strconv.AppendUint([]byte("sb"), ps.next, 10)
	if ps.waiting == nil {
		ps.waiting = make(map[string]chan struct{})
	}
	ch := make(chan struct{})
	ps.waiting[string(p)] = ch
	return p, ch, func() {
		ps.mu.Lock()
		delete(ps.waiting, string(p))
		ps.mu.Unlock()
	}
}

// pong is told of a pong frame, by the reader.
func (ps *pings) pong(payload []byte) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ch, ok := ps.waiting[string(payload)]; ok {
		close(ch)
		delete(ps.waiting, string(payload))
	}
}

func (t *wsTransport) Read(ctx context.Context) ([]byte, error) {
	_, r, err := t.ws.Reader(ctx)
	if err == nil {
		var b []byte
		if b, err = readMessage(r); err == nil {
			return b, nil
		}
	}
	return nil, wsError(err)
}

// wsError is the error of a failed read. (A function of its own: Read's
// frame is on the stack of every idle connection's reader.)
func wsError(err error) error {
	var ce websocket.CloseError
	switch {
	case errors.As(err, &ce):
		return &CloseError{Code: int(ce.Code), Reason: ce.Reason}
	case errors.Is(err, websocket.ErrMessageTooBig):
		// The library has closed the connection with 1009 itself.
		return overLimit{&CloseError{Code: CloseTooBig, Reason: "message too big"}}
	}
	return err
}

// overLimit is the error of a read the transport refused for its size,
// over MaxMessage: the reader reports it to Options.OnLimit.
type overLimit struct{ *CloseError }

func (e overLimit) Unwrap() error { return e.CloseError }

// readMessage reads a message into a buffer shared by all connections
// and returns a copy of its size. Reading into a buffer of its own, as
// io.ReadAll does, costs every message 512 bytes at least (a call is
// about 60), and a large one a series of ever larger buffers: bytes the
// collector must then sweep.
func readMessage(r io.Reader) ([]byte, error) {
	buf := readBufs.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxReadBuf {
			buf.Reset()
			readBufs.Put(buf)
		}
	}()
	if _, err := buf.ReadFrom(r); err != nil {
		return nil, err
	}
	return bytes.Clone(buf.Bytes()), nil
}

// readBufs holds the buffers messages are read into; one larger than
// maxReadBuf is not kept.
var readBufs = sync.Pool{New: func() any { return bytes.NewBuffer(make([]byte, 0, 4096)) }}

const maxReadBuf = 64 << 10

// Write does not watch ctx: coder/websocket would register a
// context.AfterFunc, and stop it, for every message: four allocations, and
// a lock and a map entry in the parent context. A Conn's writes must end when
// the connection closes, before ctx ends, and they do: Close ends a write
// in progress (it closes the network connection once the close frame
// could not be written for 5 s).
func (t *wsTransport) Write(_ context.Context, msg []byte) error {
	return t.ws.Write(context.Background(), websocket.MessageText, msg)
}

// Ping sends a WebSocket ping and waits for the pong, which the reader
// receives: Conn.Ping uses it when the transport cannot write its own
// (Caps.WritePing).
func (t *wsTransport) Ping(ctx context.Context) error { return t.ws.Ping(ctx) }

// writePing writes a ping frame with payload p. The outbox's writer calls
// it between two messages, so the frame goes out whole between theirs,
// and the library's own control frames (a pong, a close) are written by
// it in one piece under the transport.Conn's lock. Nothing bounds the write
// but the connection's end, as for any message: the write-stall watchdog
// closes a connection whose writes make no progress.
func (t *wsTransport) writePing(p []byte) error {
	if t.closed.Load() {
		return nil // closing: frames after the close frame would be refused
	}
	f := make([]byte, 0, 2+len(p))
	f = append(f, 0x89, byte(len(p))) // FIN, ping; a server's frames are not masked
	_, err := t.gc.Write(append(f, p...))
	return err
}

func (t *wsTransport) Close(code int, reason string) error {
	t.closed.Store(true)
	t.closing.Lock()
	defer t.closing.Unlock()
	return t.ws.Close(websocket.StatusCode(code), reason)
}
