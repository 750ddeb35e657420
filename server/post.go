package server

import (
	"io"
	"mime"
	"net/http"
	"time"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/peer"
)

// servePost answers one JSON-RPC request or batch sent as an HTTP POST
// body. There is no connection: events cannot be delivered and the
// server cannot call back, so rpc.subscribe and callbacks fail.
func (s *Server) servePost(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var (
		identity any
		body     []byte
	)
	status := http.StatusOK
	defer func() { s.audit.accessLog(r, identity, body, status, start) }()

	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		status = http.StatusUnsupportedMediaType
		plain(w, status, "Content-Type must be application/json\n")
		return
	}
	identity, ok := s.authenticate(w, r, true)
	if !ok {
		status = http.StatusForbidden // 401 comes with a challenge
		if w.Header().Get("WWW-Authenticate") != "" {
			status = http.StatusUnauthorized
		}
		return
	}
	body, err := s.readBody(w, r)
	if err != nil {
		status = s.bodyError(w, r, err)
		return
	}
	// Registered only now: Shutdown waits for calls being served, not
	// for clients still sending.
	if !s.begin() {
		// The calls in the body did not run: -32005, as over a WebSocket.
		status = http.StatusServiceUnavailable
		writeJSON(w, status, []byte(`{"jsonrpc":"2.0","error":{"code":-32005,"message":"Shutting down"},"id":null}`))
		return
	}
	defer s.end()

	ctx := withRemote(hub.WithIdentity(r.Context(), identity), r.RemoteAddr)
	reply := peer.Respond(ctx, body, s.peerOptions(s.log, who{identity: identity, remote: r.RemoteAddr}))
	if reply == nil {
		status = http.StatusNoContent
		w.WriteHeader(status)
		return
	}
	writeJSON(w, status, reply)
}

// readBody reads a POST body of at most MaxMessage bytes within
// BodyTimeout, a deadline on the connection. Once the body is in, the
// deadline is cleared, so that it cannot end the connection (and cancel
// the call's context) while the call runs. After a failed read it stays:
// net/http tries to drain the rest of a small body before answering, and
// must not wait for a client that trickles it; the connection is closed
// after the reply. A ResponseWriter that cannot set deadlines (a wrapper
// without Unwrap) leaves the read unbounded in time.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	rc := http.NewResponseController(w)
	timed := rc.SetReadDeadline(time.Now().Add(s.o.BodyTimeout)) == nil
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(s.o.Conn.MaxMessage)))
	if err != nil {
		w.Header().Set("Connection", "close")
		return nil, err
	}
	if timed {
		_ = rc.SetReadDeadline(time.Time{})
	}
	return body, nil
}

func writeJSON(w http.ResponseWriter, code int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write(body)
}
