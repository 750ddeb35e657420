package server_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/switchboard-rpc/switchboard/server"
)

// TestAllowedHostsByAddress: AllowedHosts takes IP addresses and CIDRs
// beside names; the health probes pass whatever their Host, and a Guard
// with ByAddress lets any IP address through.
func TestAllowedHostsByAddress(t *testing.T) {
	srv := server.New(&server.Options{AllowedHosts: []string{"hub.example.com", "*.internal", "10.0.0.0/8", "[fd00::1]", "192.168.1.9"}})
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
	plain, byAddress := srv.Guard(ok, nil), srv.Guard(ok, &server.GuardOptions{ByAddress: true})
	for _, tt := range []struct {
		host, path       string
		plain, byAddress bool // passed
	}{
		{"hub.example.com", "/metrics", true, true},
		{"HUB.example.com.:443", "/metrics", true, true},
		{"db.internal", "/metrics", true, true},
		{"10.2.3.4:8080", "/metrics", true, true},
		{"[fd00::1]:9090", "/metrics", true, true},
		{"192.168.1.9", "/metrics", true, true},
		{"[::ffff:10.0.0.1]", "/metrics", true, true},
		{"192.168.1.10", "/metrics", false, true},
		{"127.0.0.1:9090", "/metrics", false, true},
		{"10.0.0.0.evil.example", "/metrics", false, false},
		{"evil.example", "/metrics", false, false},
		{"evil.example", "/healthz", true, true},
		{"evil.example", "/readyz", true, true},
		{"evil.example", "//healthz", false, false},
	} {
		for _, h := range []struct {
			name string
			h    http.Handler
			want bool
		}{{"Guard", plain, tt.plain}, {"Guard with ByAddress", byAddress, tt.byAddress}} {
			req := httptest.NewRequest(http.MethodGet, "http://x"+tt.path, nil)
			req.Host = tt.host
			w := httptest.NewRecorder()
			h.h.ServeHTTP(w, req)
			if passed := w.Code == http.StatusTeapot; passed != h.want {
				t.Errorf("%s, Host %s %s: %d, want passed: %v", h.name, tt.host, tt.path, w.Code, h.want)
			}
		}
	}
}
