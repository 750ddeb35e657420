package transport

import (
	"context"

	"github.com/coder/websocket"
)

// Caps is what a peer transport can do beyond carrying whole messages.
// peer.NewConn reads it once, from a transport that is [Capable], and
// uses each capability that is set; the zero Caps asks for nothing (an
// in-memory pipe, a user's own transport). Each field says who sets it.
type Caps struct {
	// Gather is the network connection the transport writes to, when its
	// writes can be held and sent in one (Hold, Flush): the connection's
	// outbound queue writes the messages it finds queued together
	// between the two. Set by an accepted WebSocket and by the client's.
	Gather *Conn

	// MessageWaiting reports whether a whole data message is read and
	// buffered already, so that reading it cannot wait for the other
	// side: the reader then holds its replies back until it has read it.
	// Only the reader calls it. Set by an accepted WebSocket.
	MessageWaiting func() bool

	// PollWake: the connection's callers, when one waits alone, are woken
	// by the network poller rather than by a channel (see peer's
	// wake.go). Set by the client's WebSocket.
	PollWake bool

	// Interrupt makes the transport's read in progress, or else the next
	// one, return an error wrapping ErrInterrupted once it is between two
	// messages, after which reading goes on: a caller may then read its
	// own reply, and stop when its ctx ends (see peer's own.go). Set by
	// the client's WebSocket, with PollWake, when it knows the network
	// connection (a Conn).
	Interrupt func()

	// Ping sends a ping and waits for its pong, which the reader receives.
	// Set by a WebSocket; peer.NewConn sets it too for a transport with
	// a method Ping(context.Context) error.
	Ping func(context.Context) error

	// ExpectPong and WritePing, set together, are pings written by the
	// outbound queue's writer, behind the messages queued before them,
	// rather than by Ping: ExpectPong returns the payload of a new ping,
	// a channel closed when its pong arrives and a func that forgets it;
	// WritePing writes the ping frame, between two messages. Set by an
	// accepted WebSocket.
	ExpectPong func() (payload []byte, pong <-chan struct{}, forget func())
	WritePing  func(payload []byte) error
}

// Capable is a peer transport that declares capabilities: peer.NewConn
// calls Capabilities once.
type Capable interface {
	Capabilities() Caps
}

// Dialed returns the capabilities of a WebSocket ws that this process
// dialed, over the network connection gc, nil when it is not known (an
// HTTP client of the user's dialed it): its callers are woken by the
// network poller, and over gc it gathers its writes and its reads can be
// interrupted.
func Dialed(ws *websocket.Conn, gc *Conn) Caps {
	k := Caps{PollWake: true, Ping: ws.Ping}
	if gc != nil {
		k.Gather, k.Interrupt = gc, gc.Interrupt
	}
	return k
}
