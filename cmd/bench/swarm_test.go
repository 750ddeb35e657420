package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestSwarmReconnectHonoursRetryAfter checks that a reconnecting peer
// refused with 503 and "Retry-After: 1" waits at least that long before
// it tries again, as the client package does, and counts the refusals:
// a full hub is not hammered by the peers it turns away.
func TestSwarmReconnectHonoursRetryAfter(t *testing.T) {
	var mu sync.Mutex
	var tries []time.Time
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		tries = append(tries, time.Now())
		n := len(tries)
		mu.Unlock()
		if n <= 2 {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "too many connections", http.StatusServiceUnavailable)
			return
		}
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer ws.CloseNow()
		_, _, _ = ws.Read(r.Context()) // until the peer closes
	}))
	defer hs.Close()
	p := &swarmPeer{}
	s := &swarm{urls: []string{"ws" + hs.URL[len("http"):]}, peers: []*swarmPeer{p}}
	if !s.reconnect(t.Context(), p) {
		t.Fatal("reconnect gave up")
	}
	p.conn.ws.CloseNow()
	mu.Lock()
	defer mu.Unlock()
	if len(tries) != 3 {
		t.Fatalf("%d dials, want 3", len(tries))
	}
	for i := 1; i < len(tries); i++ {
		if gap := tries[i].Sub(tries[i-1]); gap < time.Second {
			t.Errorf("dial %d came %v after a refusal with Retry-After: 1", i+1, gap)
		}
	}
	if r := s.report(0); r.DialErrors["full"] != 2 || r.Reconnects != 1 || r.PeersPerHub[0] != 1 {
		t.Errorf("report: %+v", r)
	}
}

// TestDialKind checks how a failed dial is counted: a hub that is down
// refuses the connection; one at its limit answers 503.
func TestDialKind(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "ws://" + ln.Addr().String() + "/rpc"
	ln.Close() // nothing listens there now
	full := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "2")
		http.Error(w, "too many connections", http.StatusServiceUnavailable)
	}))
	defer full.Close()
	s := &swarm{urls: []string{down, "ws" + full.URL[len("http"):]}}
	_, ra, err := s.dial(t.Context(), 0)
	if k := dialKind(err, ra); k != dialRefused {
		t.Errorf("hub down: %s (%v)", dialKindNames[k], err)
	}
	_, ra, err = s.dial(t.Context(), 1)
	if k := dialKind(err, ra); k != dialFull || ra != 2*time.Second {
		t.Errorf("hub full: %s, Retry-After %v (%v)", dialKindNames[k], ra, err)
	}
}
