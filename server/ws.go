package server

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"
	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/hub/rules"
	"github.com/switchboard-rpc/switchboard/peer"
	"go.uber.org/zap"
)

// serveWebSocket upgrades the request and serves the connection, as a
// peer of the hub, on a goroutine of its own: it returns once the
// connection is hijacked. The HTTP server's goroutine has grown its stack
// on the way through the handshake, and keeps the request's state while
// it runs: an idle connection parked on it would keep both for its life.
func (s *Server) serveWebSocket(w http.ResponseWriter, r *http.Request) {
	identity, ok, done := s.handshake(w, r)
	if !ok {
		done()
		return
	}
	release := func() {}
	if r.Context().Value(proxiedKey{}) != nil {
		if release = s.proxies.take(r.RemoteAddr); release == nil {
			done()
			s.refuse(w, r, http.StatusServiceUnavailable, refusedPerAddr, "too many connections")
			return
		}
	}
	if !s.begin() {
		done()
		release()
		w.Header().Set("Retry-After", retryAfter)
		plain(w, http.StatusServiceUnavailable, "shutting down\n")
		return
	}

	mode := websocket.CompressionDisabled
	if s.o.Compression {
		mode = websocket.CompressionNoContextTakeover
	}
	t, ws, err := peer.AcceptWebSocket(w, r, &websocket.AcceptOptions{
		InsecureSkipVerify: true, // the origin was checked by serveRPC, the same way for POST
		CompressionMode:    mode,
		Subprotocols:       []string{Subprotocol}, // chosen only when offered
	})
	if err != nil {
		done()
		s.end()
		release()
		s.log.Debug("websocket upgrade failed", zap.String("remote", r.RemoteAddr), zap.Error(err))
		return // Accept has answered
	}
	ws.SetReadLimit(int64(s.o.Conn.MaxMessage))
	// The request's context ends when this handler returns; its values
	// (an identity a middleware put there, say) stay.
	ctx := withRemote(hub.WithIdentity(context.WithoutCancel(r.Context()), identity), r.RemoteAddr)
	go s.servePeer(ctx, t, r.RemoteAddr, identity, release)
}

// servePeer serves t, accepted from remote, until the connection ends;
// it ends what serveWebSocket's begin started, and calls release.
func (s *Server) servePeer(ctx context.Context, t peer.Transport, remote string, identity any, release func()) {
	defer release()
	defer s.end()
	id := uuid.NewString()
	fields := []zap.Field{zap.String("peer", id), zap.String("remote", remote)}
	if identity != nil {
		fields = append(fields, identityField(identity))
	}
	// The connection's own diagnostics are rare: its logger encodes who
	// it is only if it ever logs, not for every idle connection.
	conn := peer.NewConn(t, s.peerOptions(s.log.WithLazy(fields...), who{identity: identity, peer: id, remote: remote}))

	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		_ = conn.CloseWith(peer.CloseGoingAway, "going away")
		<-conn.Done()
		return
	}
	s.trackLocked(conn)
	s.mu.Unlock()

	p := s.hub.Join(conn, id, identity)
	p.SetRemote(remote)
	if tok, ok := identity.(*rules.Identity); ok {
		defer s.expiries.watch(conn, tok)()
	}
	s.counters.accepted.Add(1)
	start := time.Now()
	s.log.Info("peer connected", fields...)

	err := conn.Serve(ctx)

	s.hub.Leave(p)
	s.untrack(conn)

	// Err is final now that Serve has returned; it holds the close code
	// either side sent.
	fields = append(fields, zap.Duration("duration", time.Since(start)))
	if ce, ok := errors.AsType[*peer.CloseError](conn.Err()); ok {
		fields = append(fields, zap.Int("code", ce.Code))
		if ce.Reason != "" {
			fields = append(fields, zap.String("reason", ce.Reason))
		}
		if err != nil && ce.Code != peer.CloseNormal && ce.Code != peer.CloseGoingAway {
			fields = append(fields, zap.Error(err))
		}
	}
	s.log.Info("peer disconnected", fields...)
}
