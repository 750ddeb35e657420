package peer

import (
	"context"
	"errors"

	"github.com/coder/websocket"
)

// WebSocket adapts a *websocket.Conn (github.com/coder/websocket) to a
// Transport. Text and binary messages are both read as JSON; messages are
// written as text. Set the read limit on ws (SetReadLimit) to
// Options.MaxMessage: the WebSocket library then closes with 1009 itself.
func WebSocket(ws *websocket.Conn) Transport { return wsTransport{ws} }

type wsTransport struct{ ws *websocket.Conn }

func (t wsTransport) Read(ctx context.Context) ([]byte, error) {
	_, b, err := t.ws.Read(ctx)
	if err != nil {
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
	return b, nil
}

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
