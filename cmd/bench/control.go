package main

// This file holds the scale command's publisher: a connection of the load
// generator's own, dialed before the peers (a hub that holds as many
// peers as it takes would refuse it once they came) and kept for the
// whole run.

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// control is a connection read all along by a goroutine of its own, so
// that it answers the hub's WebSocket pings however long it waits between
// calls (a conn answers them only while a call reads its reply, and the
// hub closes a peer that does not answer within a minute); call takes the
// replies from it.
type control struct {
	c       *conn
	replies chan []byte
	quit    chan struct{} // closed by close: the reader stops handing on
	done    chan struct{} // closed once the reader has ended
	err     error         // why the reader ended, once done is closed
	once    sync.Once
}

// dialControl dials u and starts the connection's reader.
func dialControl(ctx context.Context, u string) (*control, error) {
	c, err := dial(ctx, u)
	if err != nil {
		return nil, err
	}
	k := &control{c: c, replies: make(chan []byte), quit: make(chan struct{}), done: make(chan struct{})}
	go k.read()
	return k, nil
}

// read hands every reply on to call, until the connection ends. What is
// not a reply (a message with a method: the hub sends none to a peer
// that has not subscribed) is dropped.
func (k *control) read() {
	defer close(k.done)
	for {
		msg, err := k.c.read()
		if err != nil {
			k.err = err
			return
		}
		if bytes.Contains(msg, []byte(`"method":`)) {
			continue
		}
		select {
		case k.replies <- bytes.Clone(msg):
		case <-k.quit:
			return
		}
	}
}

// call sends req and returns its reply, or an error if none comes within
// d or the connection ends.
func (k *control) call(req []byte, d time.Duration) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := k.c.ws.Write(ctx, websocket.MessageText, req); err != nil {
		return nil, err
	}
	select {
	case msg := <-k.replies:
		return msg, nil
	case <-k.done:
		return nil, fmt.Errorf("the publisher's connection ended: %w", k.err)
	case <-ctx.Done():
		return nil, fmt.Errorf("no reply within %v", d)
	}
}

// close closes the connection and waits for its reader to end; it may be
// called more than once.
func (k *control) close() {
	k.once.Do(func() {
		close(k.quit)
		k.c.close()
		<-k.done
	})
}
