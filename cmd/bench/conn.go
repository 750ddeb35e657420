package main

// This file holds the load generator's WebSocket connections: dialing
// them, many at once, and a call over one.

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

func dial(ctx context.Context, u string) (*conn, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, u, nil)
	if err != nil {
		return nil, err
	}
	ws.SetReadLimit(-1)
	return &conn{ws: ws}, nil
}

// conn is one connection with a buffer its replies are read into.
type conn struct {
	ws  *websocket.Conn
	buf []byte
}

func (c *conn) read() ([]byte, error) {
	var err error
	c.buf, err = readMessage(context.Background(), c.ws, c.buf[:0])
	return c.buf, err
}

func (c *conn) roundTrip(req []byte) ([]byte, error) {
	if err := c.ws.Write(context.Background(), websocket.MessageText, req); err != nil {
		return nil, err
	}
	return c.read()
}

func (c *conn) close() { _ = c.ws.Close(websocket.StatusNormalClosure, "") }

// dialMany opens n connections, l.dialers at a time, and sends each one
// first frame (nil: none), reading its reply.
func dialMany(ctx context.Context, l *load, u string, n int, first []byte) ([]*conn, error) {
	return dialEach(ctx, l, u, n, first, nil)
}

// dialEach is dialMany that hands each connection to ready (if not nil)
// as soon as its first frame is answered, while the others are still
// being opened. On an error, the connections are closed once every call
// to ready has returned.
func dialEach(ctx context.Context, l *load, u string, n int, first []byte, ready func(int, *conn)) ([]*conn, error) {
	conns := make([]*conn, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, l.dialers)
	for range l.dialers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				c, err := dial(ctx, u)
				if err != nil {
					errs <- fmt.Errorf("connection %d: %w", i, err)
					return
				}
				conns[i] = c
				if first != nil {
					if _, err := c.roundTrip(first); err != nil {
						errs <- fmt.Errorf("connection %d: %w", i, err)
						return
					}
				}
				if ready != nil {
					ready(i, c)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		closeAll(conns)
		return nil, err
	}
	return conns, ctx.Err()
}

func closeAll(conns []*conn) {
	var wg sync.WaitGroup
	for _, c := range conns {
		if c != nil {
			wg.Go(c.close)
		}
	}
	wg.Wait()
}
