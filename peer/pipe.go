package peer

import (
	"context"
	"sync"
)

// Pipe returns two connected Conns over an in-memory transport, already
// serving: a is configured by aOpts, b by bOpts. Closing either closes
// both. Pipe is for tests and examples; it behaves like a WebSocket,
// including close codes and the message size limit.
func Pipe(aOpts, bOpts *Options) (a, b *Conn) {
	ta, tb := NewPipeTransport()
	a, b = NewConn(ta, aOpts), NewConn(tb, bOpts)
	go a.Serve(context.Background()) //nolint:errcheck // the result is in a.Err
	go b.Serve(context.Background()) //nolint:errcheck
	return a, b
}

// NewPipeTransport returns the two ends of an in-memory Transport.
// Messages are copied, so neither side sees the other's buffers.
func NewPipeTransport() (Transport, Transport) {
	s := &pipeState{closed: make(chan struct{})}
	ab := make(chan []byte, 16)
	ba := make(chan []byte, 16)
	return &pipeEnd{s: s, in: ba, out: ab}, &pipeEnd{s: s, in: ab, out: ba}
}

type pipeState struct {
	once   sync.Once
	closed chan struct{}
	err    *CloseError
}

type pipeEnd struct {
	s       *pipeState
	in, out chan []byte
}

func (p *pipeEnd) Read(ctx context.Context) ([]byte, error) {
	select {
	case m := <-p.in:
		return m, nil
	case <-p.s.closed:
		// Deliver what was sent before the close, as TCP would.
		select {
		case m := <-p.in:
			return m, nil
		default:
		}
		return nil, p.s.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (p *pipeEnd) Write(ctx context.Context, msg []byte) error {
	m := append([]byte(nil), msg...)
	select {
	case <-p.s.closed:
		return p.s.err
	default:
	}
	select {
	case p.out <- m:
		return nil
	case <-p.s.closed:
		return p.s.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *pipeEnd) Close(code int, reason string) error {
	p.s.once.Do(func() {
		p.s.err = &CloseError{Code: code, Reason: reason}
		close(p.s.closed)
	})
	return nil
}
