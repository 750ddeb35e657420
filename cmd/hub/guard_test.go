package main

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestHostMatrix: every path of both listeners but the health probes
// refuses a Host header that could come from a page of another site
// re-bound to the hub's address (403), and serves one that names the hub;
// with -hosts and without, with a token and without. A page that re-binds
// its own name to 127.0.0.1 reads nothing: not the metrics, not a profile,
// not the playground; the probes tell it only "ok" and "ready".
func TestHostMatrix(t *testing.T) {
	file, tokens := writeTokens(t, 1)
	paths := []string{"/", "/rpc", "/metrics", "/switchboard.js", "/nowhere",
		"/debug/pprof/", "/debug/pprof/cmdline", "/debug/pprof/heap"}
	for _, tt := range []struct {
		name  string
		args  []string
		good  string // a Host that is allowed, with the port added
		token bool
	}{
		{"defaults", nil, "127.0.0.1", false},
		{"hosts", []string{"-hosts", "hub.example"}, "hub.example", false},
		{"token", []string{"-token-file", file}, "localhost", true},
		{"hosts and token", []string{"-hosts", "hub.example", "-token-file", file}, "hub.example", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := startProc(t, append(tt.args, "-metrics-addr", "127.0.0.1:0", "-pprof")...)
			defer p.Stop(t)
			for _, addr := range []string{p.Addr(t, "hub listening"), p.Addr(t, "metrics listening")} {
				port := addr[strings.LastIndexByte(addr, ':'):]
				auth := ""
				if tt.token {
					auth = "Bearer " + tokens[0]
				}
				for _, path := range paths {
					if status, body := hostRequest(t, addr, "evil.example"+port, path, auth); status != 403 {
						t.Errorf("%s%s with Host evil.example: %d %.60q, want 403", addr, path, status, body)
					}
					status, _ := hostRequest(t, addr, tt.good+port, path, auth)
					if status == 403 || status == 401 {
						t.Errorf("%s%s with Host %s: %d", addr, path, tt.good, status)
					}
				}
			}
		})
	}
}

// TestTokenOnEveryPath: with -token-file, every path of -addr needs the
// token but the health probes and the playground's files, which hold
// nothing of the hub's. (JSON-RPC at /rpc is the server's to refuse:
// TestTokenFile.)
func TestTokenOnEveryPath(t *testing.T) {
	file, tokens := writeTokens(t, 1)
	p := startProc(t, "-token-file", file)
	defer p.Stop(t)
	addr := p.Addr(t, "hub listening")
	for _, tt := range []struct {
		path string
		open bool
	}{
		{"/metrics", false}, {"/nowhere", false}, {"/debug/pprof/", false},
		{"/healthz", true}, {"/", true}, {"/switchboard.js", true}, {"/playground.css", true},
	} {
		status, _ := hostRequest(t, addr, addr, tt.path, "")
		if tt.open != (status != 401) {
			t.Errorf("GET %s without a token: %d (open: %v)", tt.path, status, tt.open)
		}
		if status, _ := hostRequest(t, addr, addr, tt.path, "Bearer "+tokens[0]); status == 401 || status == 403 {
			t.Errorf("GET %s with the token: %d", tt.path, status)
		}
	}
}

// hostRequest sends GET path to addr with the given Host header, and an
// Authorization header unless auth is "", and returns the status and body.
func hostRequest(t *testing.T, addr, host, path, auth string) (int, string) {
	t.Helper()
	c := dialRaw(t, addr)
	req := "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n"
	if auth != "" {
		req += "Authorization: " + auth + "\r\n"
	}
	if _, err := io.WriteString(c, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestHostsByAddress: with -hosts naming the hub, what reaches it by
// address still works: the health probes on both listeners (a Kubernetes
// probe sends the pod's IP, a load balancer's check the node's), and the
// metrics listener, which Prometheus scrapes by address. Other paths of
// -addr take a Host that -hosts lists, a name, an IP or a CIDR holding it.
func TestHostsByAddress(t *testing.T) {
	for _, tt := range []struct {
		name  string
		hosts string
		ok    map[string]bool // Host of a GET / on -addr: served
	}{
		{"names", "hub.example", map[string]bool{"hub.example": true, "127.0.0.1": false, "10.1.2.3": false, "evil.example": false}},
		{"names and a CIDR", "hub.example,127.0.0.0/8,[::1]", map[string]bool{"hub.example": true, "127.0.0.1": true, "127.9.9.9": true, "[::1]": true, "10.1.2.3": false, "evil.example": false}},
		{"an IP", "10.1.2.3", map[string]bool{"10.1.2.3": true, "10.1.2.4": false, "127.0.0.1": false, "hub.example": false}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := startProc(t, "-hosts", tt.hosts, "-metrics-addr", "127.0.0.1:0", "-pprof")
			defer p.Stop(t)
			addr, admin := p.Addr(t, "hub listening"), p.Addr(t, "metrics listening")
			for _, a := range []string{addr, admin} {
				for _, path := range []string{"/healthz", "/readyz"} {
					for _, host := range []string{a, "10.0.0.7:8080", "evil.example"} {
						if status, body := hostRequest(t, a, host, path, ""); status != 200 {
							t.Errorf("%s%s with Host %s: %d %q, want 200", a, path, host, status, body)
						}
					}
				}
			}
			for _, path := range []string{"/metrics", "/debug/pprof/cmdline"} {
				if status, _ := hostRequest(t, admin, admin, path, ""); status != 200 {
					t.Errorf("%s on -metrics-addr by address: %d, want 200", path, status)
				}
				if status, _ := hostRequest(t, admin, "evil.example", path, ""); status != 403 {
					t.Errorf("%s on -metrics-addr with Host evil.example: %d, want 403", path, status)
				}
			}
			port := addr[strings.LastIndexByte(addr, ':'):]
			for host, ok := range tt.ok {
				status, _ := hostRequest(t, addr, host+port, "/", "")
				if ok != (status != 403) {
					t.Errorf("GET / on -addr with Host %s: %d (served: %v)", host, status, ok)
				}
			}
		})
	}
}
