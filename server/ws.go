package server

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"
	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/peer"
	"go.uber.org/zap"
)

// serveWebSocket upgrades the request and serves the connection, as a
// peer of the hub, on this goroutine until it ends.
func (s *Server) serveWebSocket(w http.ResponseWriter, r *http.Request) {
	identity, ok, done := s.handshake(w, r)
	defer done()
	if !ok {
		return
	}
	if !s.begin() {
		plain(w, http.StatusServiceUnavailable, "shutting down\n")
		return
	}
	defer s.end()

	mode := websocket.CompressionDisabled
	if s.o.Compression {
		mode = websocket.CompressionNoContextTakeover
	}
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{
		InsecureSkipVerify: true, // the origin was checked by serveRPC, the same way for POST
		CompressionMode:    mode,
		Subprotocols:       []string{Subprotocol}, // chosen only when offered
	})
	if err != nil {
		s.log.Debug("websocket upgrade failed", zap.String("remote", r.RemoteAddr), zap.Error(err))
		return // Accept has answered
	}
	ws.SetReadLimit(int64(s.o.MaxMessage))

	id := uuid.NewString()
	log := s.log.With(zap.String("peer", id), zap.String("remote", r.RemoteAddr))
	t := &reads{Transport: peer.WebSocket(ws)}
	conn := peer.NewConn(t, s.peerOptions(log))

	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		_ = conn.CloseWith(peer.CloseGoingAway, "going away")
		<-conn.Done()
		return
	}
	s.conns[conn] = struct{}{}
	s.mu.Unlock()

	p := s.hub.Join(conn, id, identity)
	s.metrics.connections.Inc()
	start := time.Now()
	if identity != nil {
		log.Info("peer connected", zap.Any("identity", identity))
	} else {
		log.Info("peer connected")
	}

	err = conn.Serve(hub.WithIdentity(r.Context(), identity))

	s.hub.Leave(p)
	s.mu.Lock()
	delete(s.conns, conn)
	s.mu.Unlock()

	code, reason := closeCode(conn.Err(), t.err)
	if code == 0 && s.isClosing() {
		code, reason = peer.CloseGoingAway, "going away"
	}
	fields := []zap.Field{zap.Duration("duration", time.Since(start)), zap.Int("code", code)}
	if reason != "" {
		fields = append(fields, zap.String("reason", reason))
	}
	if err != nil && code != peer.CloseNormal && code != peer.CloseGoingAway {
		fields = append(fields, zap.Error(err))
	}
	log.Info("peer disconnected", fields...)
}

// reads remembers the error that ended a transport's reads. Shutdown can
// close a connection after its read failed (the other side closed it, or
// sent a message over the limit, and the library answered with 1009) but
// before the reader has handled the error: the connection's cause is then
// this side's close, and only the read error still says how it ended.
// Read is called by the goroutine running peer.Conn.Serve only, which
// also reads err once Serve has returned.
type reads struct {
	peer.Transport
	err error
}

func (t *reads) Read(ctx context.Context) ([]byte, error) {
	b, err := t.Transport.Read(ctx)
	if err != nil && t.err == nil {
		t.err = err
	}
	return b, err
}

// closeCode works out the WebSocket close code a connection ended with,
// from either side, given the connection's cause (peer.Conn.Err) and the
// error its reads ended with; 0 when unknown. A peer too slow for its
// events was closed by this side with 1008; otherwise the read error
// comes first, as a close from this side may have overtaken it.
func closeCode(cause, readErr error) (int, string) {
	if errors.Is(cause, peer.ErrTooSlow) {
		return peer.ClosePolicy, "too slow"
	}
	for _, err := range []error{readErr, cause} {
		if ce, ok := errors.AsType[*peer.CloseError](err); ok {
			return ce.Code, ce.Reason
		}
		if errors.Is(err, websocket.ErrMessageTooBig) {
			return peer.CloseTooBig, "message too big"
		}
		if c := websocket.CloseStatus(err); c != -1 {
			return int(c), ""
		}
	}
	return 0, ""
}
