package server

import (
	"context"
	"net/http"
	"time"
)

// DefaultHandshakeTimeout is the default of Options.HandshakeTimeout.
const DefaultHandshakeTimeout = 10 * time.Second

// handshake authenticates a WebSocket request within HandshakeTimeout and
// gives the 101 response the rest of it: the write deadline it sets is
// cleared by the hijack that follows an upgrade. done clears it when
// there was no upgrade, so that a refused request's keep-alive connection
// does not carry it into the next request.
func (s *Server) handshake(w http.ResponseWriter, r *http.Request) (identity any, ok bool, done func()) {
	d := s.o.HandshakeTimeout
	if d <= 0 {
		d = DefaultHandshakeTimeout
	}
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Now().Add(d)) // unsupported by some wrappers: then unbounded
	ctx, cancel := context.WithTimeout(r.Context(), d)
	defer cancel()
	identity, ok = s.authenticate(w, r.WithContext(ctx), false)
	return identity, ok, func() { _ = rc.SetWriteDeadline(time.Time{}) }
}
