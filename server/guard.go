package server

import "net/http"

// Guard returns h behind the checks that every path of a hub's listeners
// needs, whatever serves it: the Host check of Options.AllowedHosts (the
// DNS rebinding defence: a refused host gets 403, counted and logged as
// the server's own refusals are), then, unless open exempts the request,
// the operator's authentication: operator runs as Options.Authenticate
// would (401, or 403 for ErrForbidden), and a request it lets in without
// an identity gets 401 too. A nil operator asks for nothing.
//
// The paths behind Guard (metrics, profiles) are the operator's, not the
// end users': operator is not Options.Authenticate but what accepts the
// operator's own credentials, such as a static token, so that a JSON Web
// Token a login system issued to any user opens none of them. When no
// such credential exists, an operator that refuses every request
// (ErrForbidden) keeps them closed.
//
// Wrap a whole mux, not its handlers one by one, so that a handler added
// to it later is covered too. The server's own paths need no exemption:
// a JSON-RPC request (at /rpc, or a POST or upgrade at /) is
// authenticated once, by the server, with Options.Authenticate; open
// exempts what must be reachable without a token, such as health probes.
// A nil open exempts nothing.
func (s *Server) Guard(h http.Handler, open func(*http.Request) bool, operator func(*http.Request) (any, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hostAllowed(r) {
			s.refuse(w, r, http.StatusForbidden, refusedHost, "host not allowed")
			return
		}
		if operator != nil && !s.selfAuthenticated(r) && (open == nil || !open(r)) {
			id, ok := s.authenticateWith(operator, w, r, false)
			if !ok {
				return
			}
			if id == nil {
				w.Header().Set("WWW-Authenticate", `Bearer realm="switchboard"`)
				s.refuse(w, r, http.StatusUnauthorized, refusedAuth, "a token is needed")
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// selfAuthenticated reports whether the server authenticates r itself:
// JSON-RPC at /rpc or at / (a POST or a WebSocket upgrade).
func (s *Server) selfAuthenticated(r *http.Request) bool {
	switch r.URL.Path {
	case "/rpc":
		return true
	case "/":
		return r.Method == http.MethodPost || isUpgrade(r)
	}
	return false
}
