package server

import (
	"context"
	"errors"
	"time"

	"github.com/switchboard-rpc/switchboard/peer"
)

// The server pings every WebSocket peer at PingInterval from one goroutine,
// the pinger, which runs while any peer is connected: an idle peer costs
// no goroutine of its own. Each ping runs on a goroutine of its own only
// until its pong, PingTimeout, or the connection's end.

// trackLocked registers conn, starting the pinger for the first one. It
// is called with s.mu held.
func (s *Server) trackLocked(conn *peer.Conn) {
	s.conns[conn] = false
	if s.pingStop == nil && s.o.PingInterval > 0 {
		s.pingStop = make(chan struct{})
		go s.pinger(s.pingStop)
	}
}

// untrack unregisters conn, stopping the pinger after the last one.
func (s *Server) untrack(conn *peer.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conns, conn)
	if len(s.conns) == 0 && s.pingStop != nil {
		close(s.pingStop)
		s.pingStop = nil
	}
}

// pinger pings every peer each PingInterval until stop is closed.
func (s *Server) pinger(stop <-chan struct{}) {
	t := time.NewTicker(s.o.PingInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		s.mu.Lock()
		for conn, pinging := range s.conns {
			if !pinging { // a ping still waiting for its pong is not doubled
				s.conns[conn] = true
				go s.ping(conn)
			}
		}
		s.mu.Unlock()
	}
}

// ping pings conn, unless it showed signs of life since the last tick
// (see peer.Conn.PingIdle), and closes it, with 1001, when nothing at all
// came back within PingTimeout. A peer that is slow to read is not closed
// here: its ping waits behind its queued messages, and one that reads
// nothing is closed by the write-stall rule (peer.Options.WriteStall).
func (s *Server) ping(conn *peer.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), s.o.PingTimeout)
	defer cancel()
	err := conn.PingIdle(ctx)
	s.mu.Lock()
	if _, ok := s.conns[conn]; ok {
		s.conns[conn] = false
	}
	s.mu.Unlock()
	if errors.Is(err, context.DeadlineExceeded) {
		_ = conn.CloseWith(peer.CloseGoingAway, "ping timeout")
	}
}
