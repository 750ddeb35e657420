package server

import (
	"sync/atomic"

	"github.com/switchboard-rpc/switchboard/hub"
)

// Stats are counters of a server's activity since it was created, for
// monitoring. The server/prom package exports them to Prometheus; the
// calls themselves are observed through Options.OnServe.
type Stats struct {
	Connections int    // WebSockets open now
	Accepted    uint64 // WebSockets accepted

	// Refused counts the requests to /rpc refused before they were
	// served, by reason: "origin", "host", "auth", "too_large" and
	// "body_timeout". Every reason is present, counted or not.
	Refused map[string]uint64

	Hub hub.Stats // the server's hub
}

// refusal is why a request was refused before it was served.
type refusal int

const (
	refusedOrigin refusal = iota
	refusedHost
	refusedAuth
	refusedTooLarge
	refusedBodyTimeout
	numRefusals
)

var refusalNames = [numRefusals]string{"origin", "host", "auth", "too_large", "body_timeout"}

func (r refusal) String() string { return refusalNames[r] }

// counters are the server's own counters; the hub keeps its own.
type counters struct {
	accepted atomic.Uint64
	refused  [numRefusals]atomic.Uint64
}

// Stats returns the server's counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	open := len(s.conns)
	s.mu.Unlock()
	st := Stats{
		Connections: open,
		Accepted:    s.counters.accepted.Load(),
		Refused:     make(map[string]uint64, numRefusals),
		Hub:         s.hub.Stats(),
	}
	for r := range numRefusals {
		st.Refused[r.String()] = s.counters.refused[r].Load()
	}
	return st
}
