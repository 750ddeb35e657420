package server

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"strings"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/peer"
)

// This file lets another protocol share the server's door and its path to
// the methods: server/mcp serves the Model Context Protocol at /mcp with
// the checks of /rpc, and runs its tool calls as POST callers' calls.

// Handle serves h at path (an exact path, such as "/mcp") behind the
// checks of /rpc: the Host check, the Origin check (a browser origin that
// AllowedOrigins does not allow gets 403), and Authenticate (401, or 403
// for ErrForbidden; an anonymous caller passes where /rpc lets it in). The
// identity reaches h through [hub.Identity] on the request's context (a
// CORS preflight, which browsers send without credentials, reaches h
// unauthenticated). A POST body is read first, as a POST to /rpc is: over Conn.MaxMessage it
// gets 413, still arriving after BodyTimeout 408; then, while the server
// shuts down, 503; Shutdown waits for POSTs being served. [Server.Guard]
// leaves the authentication of path to the server.
//
// Call Handle before the server serves.
func (s *Server) Handle(path string, h http.Handler) {
	s.handled.Store(path, true)
	s.mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path {
			http.NotFound(w, r)
			return
		}
		if !s.originAllowed(r) {
			s.refuse(w, r, http.StatusForbidden, refusedOrigin, "origin not allowed")
			return
		}
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.ServeHTTP(w, r) // a CORS preflight: browsers send no credentials with it
			return
		}
		identity, ok := s.authenticate(w, r, false)
		if !ok {
			return
		}
		if r.Method == http.MethodPost {
			body, err := s.readBody(w, r)
			if err != nil {
				s.bodyError(w, r, err)
				return
			}
			if !s.begin() {
				w.Header().Set("Retry-After", retryAfter)
				plain(w, http.StatusServiceUnavailable, "shutting down\n")
				return
			}
			defer s.end()
			r.Body = http.NoBody
			if len(body) > 0 {
				r.Body = bodyReader{bytes.NewReader(body)}
			}
		}
		h.ServeHTTP(w, r.WithContext(hub.WithIdentity(r.Context(), identity)))
	})
}

type bodyReader struct{ *bytes.Reader }

func (bodyReader) Close() error { return nil }

// bodyError answers a POST whose body could not be read, and returns the
// status it answered with.
func (s *Server) bodyError(w http.ResponseWriter, r *http.Request, err error) int {
	var tooBig *http.MaxBytesError
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		s.refuse(w, r, http.StatusRequestTimeout, refusedBodyTimeout, "body not received in time")
		return http.StatusRequestTimeout
	case errors.As(err, &tooBig):
		s.refuse(w, r, http.StatusRequestEntityTooLarge, refusedTooLarge, "body over the size limit")
		return http.StatusRequestEntityTooLarge
	}
	plain(w, http.StatusBadRequest, "cannot read body\n")
	return http.StatusBadRequest
}

// Respond serves a JSON-RPC request, notification or batch exactly as the
// body of a POST to /rpc is served once read: the same methods (the
// Router's, the hub's, and those peers provide, forwarded to them), limits,
// Authorize, Policy and OnServe, under the identity of ctx (see
// [hub.WithIdentity]). It returns the reply, nil for nothing to answer.
// A call forwarded to a provider reports the provider's rpc.progress to
// the function of [peer.WithProgress] on ctx, if any; when ctx ends, the
// provider gets rpc.cancel, and its answer is returned if ctx was made
// with peer.WithProgress.
func (s *Server) Respond(ctx context.Context, body []byte) []byte {
	return peer.Respond(ctx, body, s.peerOptions(s.log, who{identity: hub.Identity(ctx)}))
}

// Callable reports whether the caller behind ctx may call method, as a
// POST caller would: nil when the method is one of the admin API's and
// AuthorizeAdmin lets it, or is one of the Router's and
// Authorize lets it (or is nil), or is provided by a peer, here or on
// another node, and the hub's Policy lets it be called. It answers -32601
// for the rpc.* methods and for those nobody serves, and the refusal
// (usually -32001) otherwise.
func (s *Server) Callable(ctx context.Context, method string) error {
	notFound := &peer.Error{Code: peer.CodeMethodNotFound, Message: "Method not found"}
	if strings.HasPrefix(method, "rpc.") {
		return notFound
	}
	if h, _ := s.adminLookup(method, nil); h != nil {
		return s.adminAllowed(ctx, method) // the admin API's, to an admin identity (admin.go)
	}
	if s.o.Router != nil {
		if h, _ := s.o.Router.Lookup(method); h != nil {
			if s.o.Authorize == nil {
				return nil
			}
			return s.o.Authorize(ctx, method)
		}
	}
	if h, _ := s.router.Lookup(method); h == nil {
		return notFound
	}
	return s.hub.Allow(ctx, hub.Call, method)
}
