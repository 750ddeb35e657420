package peer

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"

	"github.com/coder/websocket"
)

// WebSocket adapts a *websocket.Conn (github.com/coder/websocket) to a
// Transport. Text and binary messages are both read as JSON; messages are
// written as text. Set the read limit on ws (SetReadLimit) to
// Options.MaxMessage: the WebSocket library then closes with 1009 itself.
func WebSocket(ws *websocket.Conn) Transport { return wsTransport{ws} }

type wsTransport struct{ ws *websocket.Conn }

func (t wsTransport) Read(ctx context.Context) ([]byte, error) {
	_, r, err := t.ws.Reader(ctx)
	if err == nil {
		var b []byte
		if b, err = readMessage(r); err == nil {
			return b, nil
		}
	}
	var ce websocket.CloseError
	switch {
	case errors.As(err, &ce):
		return nil, &CloseError{Code: int(ce.Code), Reason: ce.Reason}
	case errors.Is(err, websocket.ErrMessageTooBig):
		// The library has closed the connection with 1009 itself.
		return nil, &CloseError{Code: CloseTooBig, Reason: "message too big"}
	}
	return nil, err
}

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
func (t wsTransport) Write(_ context.Context, msg []byte) error {
	return t.ws.Write(context.Background(), websocket.MessageText, msg)
}

// Ping sends a WebSocket ping and waits for the pong, which the reader
// receives: Conn.Ping uses it.
func (t wsTransport) Ping(ctx context.Context) error { return t.ws.Ping(ctx) }

func (t wsTransport) Close(code int, reason string) error {
	return t.ws.Close(websocket.StatusCode(code), reason)
}
