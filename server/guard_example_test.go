package server_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/switchboard-rpc/switchboard/server"
)

// The operator's paths behind Guard: /metrics takes the operator's static
// token, not what Options.Authenticate accepts for JSON-RPC (here any
// bearer token, as a JWT verifier would accept any user's), and the health
// probes answer whatever their Host.
func ExampleServer_Guard() {
	users := func(r *http.Request) (any, error) { // every user of the login system
		if tok := server.BearerToken(r); tok != "" {
			return tok, nil
		}
		return nil, server.ErrUnauthorized
	}
	srv := server.New(&server.Options{Authenticate: users, AllowedHosts: []string{"hub.example.com"}})
	routes := http.NewServeMux()
	routes.Handle("/healthz", srv)
	routes.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "switchboard_connections 0") })
	h := srv.Guard(routes, &server.GuardOptions{
		Operator: server.TokenAuth(map[string]string{"operator-s3cret": "prometheus"}),
		Open:     func(r *http.Request) bool { return r.URL.Path == "/healthz" },
	})

	for _, tt := range []struct{ host, path, token string }{
		{"hub.example.com", "/metrics", "a-users-token"},
		{"hub.example.com", "/metrics", "operator-s3cret"},
		{"evil.example", "/metrics", "operator-s3cret"},
		{"10.0.0.7:8080", "/healthz", ""},
	} {
		req := httptest.NewRequest(http.MethodGet, "http://hub"+tt.path, nil)
		req.Host = tt.host
		if tt.token != "" {
			req.Header.Set("Authorization", "Bearer "+tt.token)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		fmt.Println(tt.host, tt.path, w.Code)
	}
	// Output:
	// hub.example.com /metrics 401
	// hub.example.com /metrics 200
	// evil.example /metrics 403
	// 10.0.0.7:8080 /healthz 200
}
