package server

import (
	"errors"
	"io"
	"mime"
	"net/http"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/peer"
)

// servePost answers one JSON-RPC request or batch sent as an HTTP POST
// body. There is no connection: events cannot be delivered and the
// server cannot call back, so rpc.subscribe and callbacks fail.
func (s *Server) servePost(w http.ResponseWriter, r *http.Request) {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		plain(w, http.StatusUnsupportedMediaType, "Content-Type must be application/json\n")
		return
	}
	identity, ok := s.authenticate(w, r, true)
	if !ok {
		return
	}
	if !s.begin() {
		plain(w, http.StatusServiceUnavailable, "shutting down\n")
		return
	}
	defer s.wg.Done()

	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(s.o.MaxMessage)))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			s.metrics.rejected.WithLabelValues("too_large").Inc()
			plain(w, http.StatusRequestEntityTooLarge, "body over the size limit\n")
			return
		}
		plain(w, http.StatusBadRequest, "cannot read body\n")
		return
	}
	ctx := hub.WithIdentity(r.Context(), identity)
	reply := peer.Respond(ctx, body, s.peerOptions(s.log))
	if reply == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	writeJSON(w, http.StatusOK, reply)
}

func writeJSON(w http.ResponseWriter, code int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write(body)
}
