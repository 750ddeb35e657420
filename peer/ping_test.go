package peer

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/internal/transport"
)

// pingingTransport writes its own ping frames (Caps.WritePing), as an
// accepted WebSocket does; each write, ping or message, takes a token
// from gate.
type pingingTransport struct {
	gate   chan struct{}
	closed chan struct{}
	once   sync.Once
	pings  pings

	mu      sync.Mutex
	written []string
}

func (p *pingingTransport) Read(context.Context) ([]byte, error) {
	<-p.closed
	return nil, &CloseError{Code: CloseNormal}
}

func (p *pingingTransport) Write(_ context.Context, msg []byte) error {
	return p.record(string(msg))
}

func (p *pingingTransport) record(s string) error {
	select {
	case <-p.gate:
	case <-p.closed:
		return ErrClosed
	}
	p.mu.Lock()
	p.written = append(p.written, s)
	p.mu.Unlock()
	return nil
}

func (p *pingingTransport) Close(int, string) error {
	p.once.Do(func() { close(p.closed) })
	return nil
}

func (p *pingingTransport) Capabilities() transport.Caps {
	return transport.Caps{ExpectPong: p.pings.expect, WritePing: p.writePing}
}
func (p *pingingTransport) writePing(payload []byte) error {
	return p.record("ping " + string(payload))
}

func (p *pingingTransport) messages() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.written...)
}

// Conn.Ping queues its ping behind the messages waiting to be written,
// and no deadline but its context's bounds it: a ping that waits longer
// than a WebSocket library would give it (5 s) is written once the others
// are, and Ping returns nil when the pong comes.
func TestPingWaitsBehindQueue(t *testing.T) {
	tr := &pingingTransport{gate: make(chan struct{}), closed: make(chan struct{})}
	c := NewConn(tr, nil)
	served := make(chan error, 1)
	go func() { served <- c.Serve(context.Background()) }()
	defer func() {
		c.Close()
		<-served
	}()
	for _, m := range []string{"a", "b"} { // a is being written, b waits
		if err := c.Post([]byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	pinged := make(chan error, 1)
	go func() { pinged <- c.Ping(context.Background()) }()
	testkit.WaitFor(t, "the ping to be queued", func() bool {
		tr.pings.mu.Lock()
		defer tr.pings.mu.Unlock()
		return len(tr.pings.waiting) == 1
	})
	select {
	case err := <-pinged:
		t.Fatalf("Ping returned %v before its ping was written", err)
	case <-time.After(10 * time.Millisecond): // it has had every chance to write out of turn
	}
	for range 3 {
		tr.gate <- struct{}{}
	}
	testkit.WaitFor(t, "the ping to be written", func() bool { return len(tr.messages()) == 3 })
	if got := fmt.Sprint(tr.messages()); got != "[a b ping sb1]" {
		t.Fatalf("written: %s", got)
	}
	tr.pings.pong([]byte("sb1"))
	if err := testkit.Recv(t, pinged, "Ping to return"); err != nil {
		t.Fatalf("Ping = %v", err)
	}
}

// PingIdle pings only a peer that has shown no sign of life since the
// previous PingIdle: one that sent a message meanwhile is not asked.
func TestPingIdle(t *testing.T) {
	mux := NewMux()
	mux.Handle("nop", Func(func(context.Context, struct{}) (int, error) { return 0, nil }))
	a, b := Pipe(nil, &Options{Router: mux})
	defer func() {
		a.Close()
		<-a.Done()
		<-b.Done()
	}()
	pinged := func() uint64 { return a.reads.Load() } // a reads b's rpc.ping calls
	if err := a.Call(t.Context(), "nop", nil, nil); err != nil {
		t.Fatal(err)
	}
	before := pinged()
	if err := b.PingIdle(t.Context()); err != nil || pinged() != before {
		t.Fatalf("PingIdle after a call = %v, %d messages to the caller", err, pinged()-before)
	}
	if err := b.PingIdle(t.Context()); err != nil || pinged() != before+1 {
		t.Fatalf("PingIdle of an idle peer = %v, %d messages to it", err, pinged()-before)
	}
}
