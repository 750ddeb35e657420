package server

import "net/http"

// serveHealth answers /healthz: 200 "ok" (and Options.Version) while the
// process serves, 503 once it shuts down.
func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request) {
	if s.probeClosing(w) {
		return
	}
	body := "ok\n"
	if s.o.Version != "" {
		body = "ok " + s.o.Version + "\n"
	}
	_, _ = w.Write([]byte(body))
}

// probeClosing sets the headers of a probe's plain text answer and, once
// the server shuts down, answers 503 "shutting down" and returns true.
func (s *Server) probeClosing(w http.ResponseWriter) bool {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if !s.isClosing() {
		return false
	}
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = w.Write([]byte("shutting down\n"))
	return true
}

// serveReady answers /readyz: 200 "ready" when the server takes new
// clients and Options.Ready has nothing against it, 503 with the reason
// otherwise. /healthz says the process is alive; /readyz says whether a
// load balancer should send it clients.
func (s *Server) serveReady(w http.ResponseWriter, r *http.Request) {
	if s.probeClosing(w) {
		return
	}
	if s.o.Ready != nil {
		if err := s.o.Ready(); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(err.Error() + "\n"))
			return
		}
	}
	_, _ = w.Write([]byte("ready\n"))
}
