package server

import "net/http"

// Guard returns h behind the checks that every path of a hub's listeners
// needs, whatever serves it: the Host check of Options.AllowedHosts (the
// DNS rebinding defence: a refused host gets 403, counted and logged as
// the server's own refusals are), then, when Options.Authenticate is set
// and open does not exempt the request, authentication (401, or 403 for
// ErrForbidden): a request that Authenticate lets in without an identity
// (an anonymous peer) gets 401 too, for these paths are the operator's.
//
// Wrap a whole mux, not its handlers one by one, so that a handler added
// to it later is covered too. The server's own paths need no exemption
// for the token: a JSON-RPC request is authenticated once, by the server,
// which answers a refused POST with a JSON-RPC error body; open exempts
// what must be reachable without a token, such as health probes. A nil
// open exempts nothing; Guard(h, Open) checks only the Host.
func (s *Server) Guard(h http.Handler, open func(*http.Request) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hostAllowed(r) {
			s.refuse(w, r, http.StatusForbidden, refusedHost, "host not allowed")
			return
		}
		if s.o.Authenticate != nil && !s.selfAuthenticated(r) && (open == nil || !open(r)) {
			id, ok := s.authenticate(w, r, false)
			if !ok {
				return
			}
			if id == nil { // an anonymous peer: JSON-RPC is open to it, the operator's paths are not
				w.Header().Set("WWW-Authenticate", `Bearer realm="switchboard"`)
				s.refuse(w, r, http.StatusUnauthorized, refusedAuth, "a token is needed")
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// Open exempts every request from Guard's authentication.
func Open(*http.Request) bool { return true }

// selfAuthenticated reports whether the server authenticates r itself:
// JSON-RPC at /rpc or at / (a POST or a WebSocket upgrade), and the
// paths given to Handle.
func (s *Server) selfAuthenticated(r *http.Request) bool {
	if _, ok := s.handled.Load(r.URL.Path); ok {
		return true // Handle's
	}
	switch r.URL.Path {
	case "/rpc":
		return true
	case "/":
		return r.Method == http.MethodPost || isUpgrade(r)
	}
	return false
}
