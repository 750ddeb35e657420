package server

import (
	"context"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/switchboard-rpc/switchboard/peer"
)

// closeGrace is how long a Read or Write whose context ended waits for the
// transport's Close to begin before giving up on its own.
const closeGrace = time.Second

// wsTransport wraps peer.WebSocket so that a close goes out as a close
// frame with its code (1001 on shutdown, 1008 for a slow peer).
//
// A peer.Conn that closes cancels the contexts of its Read and Write at
// the moment it calls Close. coder/websocket treats a cancelled context as
// fatal and drops the TCP connection at once, which can cut the close
// handshake short: the other side then sees an abrupt end (1006) instead of
// the code. So Read and Write here run on contexts that outlive the peer's
// by as long as Close is under way; Close bounds the handshake itself (5s
// to write the close frame, 5s to hear back) and then ends any I/O left.
type wsTransport struct {
	peer.Transport
	closeOnce  sync.Once
	closing    chan struct{} // Close has begun
	closed     chan struct{} // Close has returned
	read       detached      // used by the one reading goroutine
	write      detached      // used by the one writing goroutine at a time
	writeMutex sync.Mutex
}

// detached is a context derived from parent that ends later than it.
type detached struct {
	parent, ctx context.Context
}

func newWSTransport(ws *websocket.Conn) *wsTransport {
	return &wsTransport{
		Transport: peer.WebSocket(ws),
		closing:   make(chan struct{}),
		closed:    make(chan struct{}),
	}
}

func (t *wsTransport) Read(ctx context.Context) ([]byte, error) {
	return t.Transport.Read(t.detach(&t.read, ctx))
}

func (t *wsTransport) Write(ctx context.Context, msg []byte) error {
	t.writeMutex.Lock()
	dctx := t.detach(&t.write, ctx)
	t.writeMutex.Unlock()
	return t.Transport.Write(dctx, msg)
}

func (t *wsTransport) Close(code int, reason string) error {
	var err error
	t.closeOnce.Do(func() {
		close(t.closing)
		err = t.Transport.Close(code, reason)
		close(t.closed)
	})
	return err
}

// detach returns a context that ends when parent has ended and either
// Close has returned or closeGrace has passed without Close beginning.
// The peer passes the same context to every Read (and to every Write), so
// one derived context is kept per parent.
func (t *wsTransport) detach(d *detached, parent context.Context) context.Context {
	if d.parent == parent {
		return d.ctx
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(parent))
	context.AfterFunc(parent, func() {
		defer cancel()
		timer := time.NewTimer(closeGrace)
		defer timer.Stop()
		select {
		case <-t.closing:
			<-t.closed
		case <-timer.C:
		}
	})
	d.parent, d.ctx = parent, ctx
	return ctx
}
