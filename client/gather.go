package client

import (
	"context"
	"net"
	"net/http"
	"sync"

	"github.com/coder/websocket"
	"github.com/switchboard-rpc/switchboard/internal/transport"
	"github.com/switchboard-rpc/switchboard/peer"
)

// The client's own HTTP transport dials connections wrapped in a
// transport.Conn: when many goroutines call at once, the calls queued
// while one is written leave together, with one system call, instead of
// one each (coder/websocket flushes every message); and a caller alone
// reads its own reply, its read interrupted when its ctx ends.

// dialedKey is the context key of the dialedConn a WebSocket handshake's
// dial reports its connection to.
type dialedKey struct{}

// dialedConn is the connection dialed for one handshake, if it dialed
// one (an idle connection of the transport's may serve it instead). The
// client's own transport carries nothing but its handshakes, one at a
// time: a connection it dialed for one is that handshake's.
type dialedConn struct {
	mu    sync.Mutex
	conns int
	gc    *transport.Conn
}

// transport is the peer transport over ws: peer's WebSocket, whose
// callers are woken by the network poller, and which gathers its writes
// and has its reads interrupted when the handshake dialed exactly one
// connection, which is then ws's.
func (d *dialedConn) transport(ws *websocket.Conn) peer.Transport {
	d.mu.Lock()
	defer d.mu.Unlock()
	var gc *transport.Conn
	if d.conns == 1 {
		gc = d.gc
	}
	return &dialed{peer.WebSocket(ws), transport.Dialed(ws, gc)}
}

// dialed is a WebSocket this package dialed, with what it can do.
type dialed struct {
	peer.Transport
	caps transport.Caps
}

func (t *dialed) Capabilities() transport.Caps { return t.caps }

// gatherDials makes t wrap the connections it dials for a handshake in
// a transport.Conn, and report them to the handshake's dialedConn.
func gatherDials(t *http.Transport) {
	dial := t.DialContext
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		d, _ := ctx.Value(dialedKey{}).(*dialedConn)
		if err != nil || d == nil {
			return c, err
		}
		gc := transport.New(c)
		d.mu.Lock()
		d.conns++
		d.gc = gc
		d.mu.Unlock()
		return gc, nil
	}
}
