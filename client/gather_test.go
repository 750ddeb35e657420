package client

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/switchboard-rpc/switchboard/internal/hubtest"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

// gatedConn counts the writes that reach the network; once armed, the
// next write waits until release is closed.
type gatedConn struct {
	net.Conn
	writes  *atomic.Int64
	armed   *atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (c *gatedConn) Write(p []byte) (int, error) {
	if c.armed.CompareAndSwap(true, false) {
		close(c.entered)
		<-c.release
	}
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// Messages queued while one is being written leave together: 31
// notifications sent while the first is stuck in its write reach the
// network in one write, not 31, and all arrive.
func TestGatheredWrites(t *testing.T) {
	h := hubtest.Start(t, nil)
	var writes atomic.Int64
	var armed atomic.Bool
	entered, release := make(chan struct{}), make(chan struct{})
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &gatedConn{Conn: c, writes: &writes, armed: &armed, entered: entered, release: release}, nil
	}}
	gatherDials(tr)
	t.Cleanup(tr.CloseIdleConnections)
	c := dial(t, h.WS(), &Options{HTTPClient: &http.Client{Transport: tr}})

	got := make(chan Event, 32)
	if _, err := c.Subscribe(ctx(t), "gather", func(e Event) { got <- e }); err != nil {
		t.Fatal(err)
	}
	publish := func() error {
		return c.Notify(ctx(t), "rpc.publish", publishParams{Topic: "gather", Data: 1})
	}
	armed.Store(true)
	before := writes.Load()
	var first sync.WaitGroup
	first.Go(func() {
		if err := publish(); err != nil {
			t.Error(err)
		}
	})
	testkit.Recv(t, entered, "the first write")
	for range 31 { // queued behind the first: Notify returns once queued
		if err := publish(); err != nil {
			t.Fatal(err)
		}
	}
	close(release)
	first.Wait()
	for range 32 {
		testkit.Recv(t, got, "an event")
	}
	// The first notification's write, and one for the 31 others; the
	// events came back on reads, which are not counted.
	if n := writes.Load() - before; n > 2 {
		t.Fatalf("32 notifications took %d writes", n)
	}
}
