package peer

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
)

// scriptedTransport returns from Read what the test feeds it: a feed
// returns once the reader has taken it. Writes block until the transport
// is closed, as on a peer that does not read.
type scriptedTransport struct {
	reads  chan scriptedRead
	once   sync.Once
	closed chan struct{}
}

type scriptedRead struct {
	msg []byte
	err error
}

func newScriptedTransport() *scriptedTransport {
	return &scriptedTransport{reads: make(chan scriptedRead), closed: make(chan struct{})}
}

func (s *scriptedTransport) Read(ctx context.Context) ([]byte, error) {
	select {
	case r := <-s.reads:
		return r.msg, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *scriptedTransport) Write(ctx context.Context, _ []byte) error {
	select {
	case <-s.closed:
		return net.ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *scriptedTransport) Close(int, string) error {
	s.once.Do(func() { close(s.closed) })
	return nil
}

// The close code and reason a connection ended with, sent or received,
// are in its error, however it ended: one errors.As finds them.
func TestCloseErrorInChain(t *testing.T) {
	bye := &CloseError{Code: CloseNormal, Reason: "bye"}
	tooBig := &CloseError{Code: CloseTooBig, Reason: "message too big"}
	notification := []byte(`{"jsonrpc":"2.0","method":"x"}`)
	for _, tt := range []struct {
		name   string
		opts   *Options
		script func(c *Conn, tr *scriptedTransport)
		code   int
		reason string
		is     error // also in the chain
	}{
		{"other side closed", nil, func(_ *Conn, tr *scriptedTransport) {
			tr.reads <- scriptedRead{err: bye}
		}, 1000, "bye", nil},
		{"message too big", nil, func(_ *Conn, tr *scriptedTransport) {
			tr.reads <- scriptedRead{err: tooBig} // the transport's own limit
		}, 1009, "message too big", nil},
		{"over peer's own limit", &Options{MaxMessage: 40}, func(_ *Conn, tr *scriptedTransport) {
			tr.reads <- scriptedRead{msg: []byte(`{"jsonrpc":"2.0","method":"x","params":["over the limit"]}`)}
		}, 1009, "message too big", nil},
		{"too slow", &Options{MaxQueue: 2}, func(c *Conn, tr *scriptedTransport) {
			err := c.Post([]byte(`{}`))
			for err == nil {
				err = c.Post([]byte(`{}`))
			}
			tr.reads <- scriptedRead{err: net.ErrClosed}
		}, 1008, "too slow", ErrTooSlow},
		// This side closed the connection after the transport had, but
		// before the read reported it: the read's code is the one that
		// went over the wire.
		{"message too big, then Shutdown", nil, func(c *Conn, tr *scriptedTransport) {
			c.CloseWith(CloseGoingAway, "going away")
			tr.reads <- scriptedRead{err: tooBig}
		}, 1009, "message too big", nil},
		{"other side closed, then Shutdown", nil, func(c *Conn, tr *scriptedTransport) {
			c.CloseWith(CloseGoingAway, "going away")
			tr.reads <- scriptedRead{err: bye}
		}, 1000, "bye", nil},
		{"closed by this side", nil, func(c *Conn, tr *scriptedTransport) {
			c.CloseWith(CloseGoingAway, "going away")
			tr.reads <- scriptedRead{err: net.ErrClosed}
		}, 1001, "going away", nil},
		{"connection broken", nil, func(_ *Conn, tr *scriptedTransport) {
			tr.reads <- scriptedRead{err: io.ErrUnexpectedEOF}
		}, CloseAbnormal, "", io.ErrUnexpectedEOF},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tr := newScriptedTransport()
			c := NewConn(tr, tt.opts)
			served := make(chan error, 1)
			go func() { served <- c.Serve(context.Background()) }()
			tr.reads <- scriptedRead{msg: notification} // Serve is running
			tt.script(c, tr)
			<-served
			<-c.Done()
			err := c.Err()
			ce, ok := errors.AsType[*CloseError](err)
			if !ok || ce.Code != tt.code || ce.Reason != tt.reason || !errors.Is(err, ErrClosed) {
				t.Fatalf("Err() = %v, want ErrClosed with close code %d %q", err, tt.code, tt.reason)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Fatalf("Err() = %v, want it to wrap %v", err, tt.is)
			}
		})
	}
}
