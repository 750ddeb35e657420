package server

import (
	"sync/atomic"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/peer"
)

// Stats are counters of a server's activity since it was created, for
// monitoring. The server/prom package exports them to Prometheus; the
// calls themselves are observed through Options.OnServe.
type Stats struct {
	Connections int    // WebSockets open now
	Accepted    uint64 // WebSockets accepted

	// Refused counts the requests to /rpc refused before they were
	// served, by reason: "origin", "host", "auth", "too_large",
	// "body_timeout" and "max_conns_per_addr" (a client behind a trusted
	// proxy). Every reason is present, counted or not.
	Refused map[string]uint64

	// Limited counts the messages refused for going over a limit, by
	// limit: "message_size" (1009), "batch", "depth" (-32600), "rate",
	// "subscriptions" (-32004) and "topic_length" (-32602), and the peers
	// closed with 1008 because they read nothing for WriteStall
	// ("write_stall"). Every limit is present, counted or not.
	Limited map[string]uint64

	// QueuedBytes is what waits to be written to all the server's
	// WebSocket peers now, as counted against Options.QueueBudget.
	QueuedBytes int64

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
	refusedPerAddr
	numRefusals
)

var refusalNames = [numRefusals]string{"origin", "host", "auth", "too_large", "body_timeout", "max_conns_per_addr"}

func (r refusal) String() string { return refusalNames[r] }

// counters are the server's own counters; the hub keeps its own.
type counters struct {
	accepted atomic.Uint64
	refused  [numRefusals]atomic.Uint64
	limited  [peer.LimitWriteStall + 1]atomic.Uint64 // by peer.Limit
}

// limit is the connections' and POSTs' peer.Options.OnLimit.
func (c *counters) limit(l peer.Limit) {
	if l > 0 && int(l) < len(c.limited) {
		c.limited[l].Add(1)
	}
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
		QueuedBytes: s.budget.Queued(),
	}
	for r := range numRefusals {
		st.Refused[r.String()] = s.counters.refused[r].Load()
	}
	st.Limited = map[string]uint64{
		"subscriptions": st.Hub.OverSubscriptions,
		"topic_length":  st.Hub.OverTopicLength,
	}
	for l := peer.LimitMessage; l <= peer.LimitWriteStall; l++ {
		st.Limited[l.String()] = s.counters.limited[l].Load()
	}
	return st
}
