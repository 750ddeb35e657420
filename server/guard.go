package server

import "net/http"

// Guard returns h behind the checks that every path of a hub's listeners
// needs, whatever serves it: the Host check of Options.AllowedHosts (the
// DNS rebinding defence: a refused host gets 403, counted and logged as
// the server's own refusals are; the health probes pass it), then what g
// asks. A nil g asks nothing more.
//
// Wrap a whole mux, not its handlers one by one, so that a handler added
// to it later is covered too. The server's own paths need no exemption:
// a JSON-RPC request (at /rpc, or a POST or upgrade at /) is
// authenticated once, by the server, with Options.Authenticate.
func (s *Server) Guard(h http.Handler, g *GuardOptions) http.Handler {
	if g == nil {
		g = &GuardOptions{}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hostAllowed(r) && (!g.ByAddress || !hostIsIP(r)) {
			s.refuse(w, r, http.StatusForbidden, refusedHost, "host not allowed")
			return
		}
		if g.Operator != nil && !s.selfAuthenticated(r) && (g.Open == nil || !g.Open(r)) {
			id, ok := s.authenticateWith(g.Operator, w, r, false)
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

// GuardOptions says what [Server.Guard] asks of a request beyond the Host
// check.
type GuardOptions struct {
	// Operator authenticates the requests Open does not exempt, as
	// Options.Authenticate would (401, or 403 for ErrForbidden; a request
	// it lets in without an identity gets 401 too). Nil: no
	// authentication.
	//
	// The paths behind Guard (metrics, profiles) are the operator's, not
	// the end users': Operator is not Options.Authenticate but what
	// accepts the operator's own credentials, such as a static token, so
	// that a JSON Web Token a login system issued to any user opens none
	// of them. When no such credential exists, an Operator that refuses
	// every request (ErrForbidden) keeps them closed.
	Operator func(*http.Request) (any, error)

	// Open exempts requests from Operator: what must be reachable without
	// a token, such as the files of a page. Nil exempts nothing.
	Open func(*http.Request) bool

	// ByAddress lets a request whose Host is an IP address pass the Host
	// check whatever AllowedHosts says: for a listener scraped by address,
	// such as a metrics listener. No DNS rebinding sends an IP address: a
	// page that re-binds its name to the server's address has the browser
	// send that name.
	ByAddress bool
}

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
