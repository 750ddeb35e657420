package main

import (
	"io"
	"strings"
	"testing"
)

// TestMetricsNeedToken: with -token-file, /metrics on the hub's address
// is served only to a request with a token, however its path is spelled.
func TestMetricsNeedToken(t *testing.T) {
	file, tokens := writeTokens(t, 1)
	url, _ := start(t, "-token-file", file)
	addr := strings.TrimPrefix(url, "http://")
	for _, path := range []string{"/metrics", "/metrics?x=1", "/%6detrics", "//metrics", "/./metrics", "/rpc/../metrics"} {
		status, body := rawRequest(t, addr, path, "")
		if status == 200 || strings.Contains(body, "switchboard_") {
			t.Errorf("GET %s without a token: %d %.80q", path, status, body)
		}
	}
	if status, _ := rawRequest(t, addr, "/metrics", ""); status != 401 {
		t.Errorf("GET /metrics without a token: %d, want 401", status)
	}
	for _, tt := range []struct{ path, auth string }{
		{"/metrics", "Bearer " + tokens[0]},
		{"/metrics?token=" + tokens[0], ""},
	} {
		if status, body := rawRequest(t, addr, tt.path, tt.auth); status != 200 || !strings.Contains(body, "switchboard_") {
			t.Errorf("GET %s with the token: %d %.80q", tt.path, status, body)
		}
	}
}

// TestMetricsAddr: -metrics-addr serves /metrics (and /healthz) there,
// without a token, and nowhere else; and the admin API at /rpc, to a
// token of the token file.
func TestMetricsAddr(t *testing.T) {
	file, tokens := writeTokens(t, 1)
	p := startProc(t, "-token-file", file, "-metrics-addr", "127.0.0.1:0")
	addr, admin := p.Addr(t, "hub listening"), p.Addr(t, "metrics listening")
	if status, _ := rawRequest(t, addr, "/metrics", "Bearer "+tokens[0]); status != 404 {
		t.Errorf("/metrics on -addr: %d, want 404", status)
	}
	if status, body := rawRequest(t, admin, "/metrics", ""); status != 200 || !strings.Contains(body, "switchboard_") {
		t.Errorf("/metrics on -metrics-addr: %d %.80q", status, body)
	}
	if status, _ := rawRequest(t, admin, "/healthz", ""); status != 200 {
		t.Errorf("/healthz on -metrics-addr: %d", status)
	}
	// The admin API answers there, to a token of the file only.
	if status, _ := rawRequest(t, admin, "/rpc", ""); status != 401 {
		t.Errorf("/rpc on -metrics-addr without a token: %d, want 401", status)
	}
	if status, _ := rawRequest(t, admin, "/rpc", "Bearer "+tokens[0]); status != 426 {
		t.Errorf("GET /rpc on -metrics-addr with the token: %d, want 426 (JSON-RPC there)", status)
	}
	if status, _ := rawRequest(t, admin, "/debug/pprof/", ""); status != 404 {
		t.Errorf("/debug/pprof/ on -metrics-addr without -pprof: %d, want 404", status)
	}
	p.Stop(t)
}

// TestPprof: -pprof serves Go's profiles on -metrics-addr, and nowhere
// else; without -metrics-addr it is refused.
func TestPprof(t *testing.T) {
	p := startProc(t, "-metrics-addr", "127.0.0.1:0", "-pprof")
	addr, admin := p.Addr(t, "hub listening"), p.Addr(t, "metrics listening")
	if status, body := rawRequest(t, admin, "/debug/pprof/heap?debug=1", ""); status != 200 || !strings.Contains(body, "heap profile") {
		t.Errorf("heap profile on -metrics-addr: %d %.80q", status, body)
	}
	if status, body := rawRequest(t, admin, "/debug/pprof/goroutine?debug=1", ""); status != 200 || !strings.Contains(body, "goroutine profile") {
		t.Errorf("goroutine profile on -metrics-addr: %d %.80q", status, body)
	}
	if status, _ := rawRequest(t, addr, "/debug/pprof/heap", ""); status == 200 {
		t.Errorf("heap profile on -addr: %d", status)
	}
	p.Stop(t)
	if err := run(t.Context(), []string{"-addr", "127.0.0.1:0", "-pprof"}, io.Discard, nil); err == nil || !strings.Contains(err.Error(), "-pprof: needs metrics-addr") {
		t.Errorf("-pprof without -metrics-addr: %v", err)
	}
}

// rawRequest sends GET path as written, with an Authorization header
// unless auth is "", and returns the status and body.
func rawRequest(t *testing.T, addr, path, auth string) (int, string) {
	t.Helper()
	return hostRequest(t, addr, addr, path, auth)
}

// TestMetricsNotForUsers: on -addr, /metrics is the operator's: a token of
// -token-file opens it, a JSON Web Token never does, whatever it says and
// whoever it names; with JWTs and no token file, nothing opens it there.
func TestMetricsNotForUsers(t *testing.T) {
	key := writeKey(t)
	file, tokens := writeTokens(t, 1)
	user := "Bearer " + signJWT(t, "alice", nil)
	backend := "Bearer " + signJWT(t, "orders", map[string]any{"role": "backend", "switchboard": map[string]any{"subscribe": []string{">"}, "call": []string{"*"}}})
	for _, tt := range []struct {
		name string
		args []string
		want map[string]int // Authorization: status
	}{
		{"jwt and token file", []string{"-jwt-key", key, "-token-file", file},
			map[string]int{"": 401, user: 401, backend: 401, "Bearer " + tokens[0]: 200}},
		{"jwt only", []string{"-jwt-key", key},
			map[string]int{"": 401, user: 403, backend: 403}},
		{"jwt only, anonymous", []string{"-jwt-key", key, "-anonymous"},
			map[string]int{"": 401, user: 403}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			url, _ := start(t, tt.args...)
			addr := strings.TrimPrefix(url, "http://")
			for auth, want := range tt.want {
				status, body := rawRequest(t, addr, "/metrics", auth)
				if status != want || (status != 200 && strings.Contains(body, "switchboard_")) {
					t.Errorf("/metrics with %.20q: %d, want %d", auth, status, want)
				}
			}
			// The same tokens still call the hub.
			if body := postAs(t, url, strings.TrimPrefix(user, "Bearer "), `{"jsonrpc":"2.0","method":"rpc.ping","id":1}`); strings.Contains(body, "error") {
				t.Errorf("rpc.ping with the JWT: %s", body)
			}
		})
	}
}
