package hubtest

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// DeadURL returns a ws:// URL of 127.0.0.1 where nothing listens: a hub
// that is down.
func DeadURL(t testing.TB) string { return "ws://" + DeadAddr(t) + "/rpc" }

// DeadAddr returns a host:port of 127.0.0.1 where nothing listens: one
// that was free a moment ago.
func DeadAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Gate is a WebSocket endpoint that stands for a hub at its connection
// limit when told to: it refuses the handshakes it is told to refuse as a
// full hub does (503, "Retry-After: 1"), and accepts the others, holding
// each connection, reading nothing of it, until the client closes it or
// Drop is called. It records when each handshake came, for tests of how
// clients come back. It stops when the test ends.
type Gate struct {
	URL string // ws://127.0.0.1:port/

	mu      sync.Mutex
	refuse  int         // the handshakes still to refuse
	dials   []time.Time // when each came
	dropped chan struct{}
}

// NewGate starts a Gate that accepts every handshake until Refuse says
// otherwise.
func NewGate(t testing.TB) *Gate {
	g := &Gate{dropped: make(chan struct{})}
	hs := httptest.NewServer(http.HandlerFunc(g.serve))
	t.Cleanup(hs.Close) // registered first, it runs after the clients' own cleanups
	g.URL = "ws" + hs.URL[len("http"):] + "/"
	return g
}

func (g *Gate) serve(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	g.dials = append(g.dials, time.Now())
	refuse, dropped := g.refuse > 0, g.dropped
	if refuse {
		g.refuse--
	}
	g.mu.Unlock()
	if refuse {
		w.Header().Set("Retry-After", "1")
		http.Error(w, "too many connections", http.StatusServiceUnavailable)
		return
	}
	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer ws.CloseNow()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-dropped:
			ws.Close(websocket.StatusGoingAway, "")
		case <-ctx.Done():
		}
	}()
	_, _, _ = ws.Read(ctx) // until the client closes it, or Drop
}

// Refuse makes the Gate refuse the next n handshakes.
func (g *Gate) Refuse(n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.refuse = n
}

// Drop closes every connection accepted so far with 1001 (going away).
func (g *Gate) Drop() {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.dropped)
	g.dropped = make(chan struct{})
}

// Gaps returns how long after the one before each handshake came,
// refused or not, from the second: one gap fewer than handshakes.
func (g *Gate) Gaps() []time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	var gaps []time.Duration
	for i := 1; i < len(g.dials); i++ {
		gaps = append(gaps, g.dials[i].Sub(g.dials[i-1]))
	}
	return gaps
}
