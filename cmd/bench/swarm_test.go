package main

import (
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/internal/hubtest"
)

// TestSwarmReconnectHonoursRetryAfter checks that a reconnecting peer
// refused with 503 and "Retry-After: 1" waits at least that long before
// it tries again, as the client package does, and counts the refusals:
// a full hub is not hammered by the peers it turns away.
func TestSwarmReconnectHonoursRetryAfter(t *testing.T) {
	g := hubtest.NewGate(t)
	g.Refuse(2)
	p := &swarmPeer{}
	s := &swarm{urls: []string{g.URL}, peers: []*swarmPeer{p}}
	if !s.reconnect(t.Context(), p) {
		t.Fatal("reconnect gave up")
	}
	p.conn.ws.CloseNow()
	if gaps := g.Gaps(); len(gaps) != 2 || gaps[0] < time.Second || gaps[1] < time.Second {
		t.Errorf("dials came after %v: want 3, each a second or more after a refusal", gaps)
	}
	if r := s.report(0); r.DialErrors["full"] != 2 || r.Reconnects != 1 || r.PeersPerHub[0] != 1 {
		t.Errorf("report: %+v", r)
	}
}

// TestDialKind checks how a failed dial is counted: a hub that is down
// refuses the connection; one at its limit answers 503.
func TestDialKind(t *testing.T) {
	full := hubtest.NewGate(t)
	full.Refuse(1)
	s := &swarm{urls: []string{hubtest.DeadURL(t), full.URL}}
	_, ra, err := s.dial(t.Context(), 0)
	if k := dialKind(err, ra); k != dialRefused {
		t.Errorf("hub down: %s (%v)", dialKindNames[k], err)
	}
	_, ra, err = s.dial(t.Context(), 1)
	if k := dialKind(err, ra); k != dialFull || ra != time.Second {
		t.Errorf("hub full: %s, Retry-After %v (%v)", dialKindNames[k], ra, err)
	}
}
