package peer

import (
	"bytes"
	"context"
	"errors"
	"sync"

	"github.com/coder/websocket"
)

// WebSocket adapts a *websocket.Conn (github.com/coder/websocket) to a
// Transport. Text and binary messages are both read as JSON; messages are
// written as text. Set the read limit on ws (SetReadLimit) to
// Options.MaxMessage: the WebSocket library then closes with 1009 itself.
func WebSocket(ws *websocket.Conn) Transport { return wsTransport{ws} }

type wsTransport struct{ ws *websocket.Conn }

// Read reads a message into a buffer shared by all connections and
// returns a copy of it, of its exact size: the library's own Read grows
// its result from 512 bytes by doubling, which for a batch of a hundred
// calls (5 KB) allocated seven times and 13 KB.
func (t wsTransport) Read(ctx context.Context) ([]byte, error) {
	_, r, err := t.ws.Reader(ctx)
	if err == nil {
		buf := readBufs.Get().(*bytes.Buffer)
		buf.Reset()
		var b []byte
		if _, err = buf.ReadFrom(r); err == nil {
			b = bytes.Clone(buf.Bytes())
		}
		if buf.Cap() <= maxReadBuf {
			readBufs.Put(buf)
		}
		if err == nil {
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

// readBufs holds the *bytes.Buffer that messages are read into.
var readBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxReadBuf is the largest read buffer kept for the next message: one
// that grew for a rare large message is left to the collector.
const maxReadBuf = 64 << 10

func (t wsTransport) Write(ctx context.Context, msg []byte) error {
	return t.ws.Write(ctx, websocket.MessageText, msg)
}

// Ping sends a WebSocket ping and waits for the pong, which the reader
// receives: Conn.Ping uses it.
func (t wsTransport) Ping(ctx context.Context) error { return t.ws.Ping(ctx) }

func (t wsTransport) Close(code int, reason string) error {
	return t.ws.Close(websocket.StatusCode(code), reason)
}
