package client

import (
	"context"
	"net"
	"net/http"
	"sync"

	"github.com/coder/websocket"
	"github.com/switchboard-rpc/switchboard/internal/gather"
	"github.com/switchboard-rpc/switchboard/peer"
)

// The client's own HTTP transport dials connections wrapped in a
// gather.Conn: when many goroutines call at once, the calls queued
// while one is written leave together, with one system call, instead of
// one each (coder/websocket flushes every message).

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
	gc    *gather.Conn
}

// transport is the peer transport over ws: gathering writes when the
// handshake dialed exactly one connection, which is then ws's.
func (d *dialedConn) transport(ws *websocket.Conn) peer.Transport {
	d.mu.Lock()
	defer d.mu.Unlock()
	var gc *gather.Conn
	if d.conns == 1 {
		gc = d.gc
	}
	return gather.Dialed(ws, gc).(peer.Transport)
}

// gatherDials makes t wrap the connections it dials for a handshake in
// a gather.Conn, and report them to the handshake's dialedConn.
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
		gc := gather.New(c)
		d.mu.Lock()
		d.conns++
		d.gc = gc
		d.mu.Unlock()
		return gc, nil
	}
}
