package deploy_test

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/switchboard-rpc/switchboard/integration/internal/hubproc"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

// get returns the status and body of a GET of url, with auth as its
// Authorization header unless it is "".
func get(t *testing.T, url, auth string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// postAdd POSTs the demo's add with a bearer token and returns the status.
func postAdd(t *testing.T, url, token string) int {
	t.Helper()
	status, _ := testkit.Post(t, t.Context(), url+"/rpc", token, `{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}`)
	return status
}

// A hub process whose JWKS is down when it starts is alive (/healthz)
// but not ready (/readyz 503) and refuses tokens; once the JWKS is back it
// turns ready by itself and takes them, without a restart.
func TestJWKSDownThenUp(t *testing.T) {
	var up atomic.Bool
	doc := `{"keys": [{"kty": "oct", "kid": "k1", "k": "` + base64.RawURLEncoding.EncodeToString(secret) + `"}]}`
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up.Load() {
			http.Error(w, "down", http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(doc))
	}))
	defer jwks.Close()
	h := hubproc.Start(t, &hubproc.Options{Args: []string{"-demo", "-jwks", jwks.URL, "-jwt-audience", "switchboard"}})
	defer func() { _ = h.Stop() }() // before jwks.Close: it fetches until it stops

	tok := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "alice", "aud": "switchboard", "exp": time.Now().Add(time.Hour).Unix()})
	tok.Header["kid"] = "k1"
	signed, err := tok.SignedString(secret)
	if err != nil {
		t.Fatal(err)
	}
	if status, body := get(t, h.URL()+"/readyz", ""); status != http.StatusServiceUnavailable || !strings.Contains(body, "jwks") {
		t.Fatalf("readyz with the JWKS down: %d %q, want 503 naming the JWKS", status, body)
	}
	if status := postAdd(t, h.URL(), signed); status != http.StatusUnauthorized {
		t.Fatalf("a token with the JWKS down: %d, want 401", status)
	}
	up.Store(true)
	back := time.Now()
	testkit.WaitFor(t, "/readyz 200 once the JWKS is back", func() bool {
		status, _ := get(t, h.URL()+"/readyz", "")
		return status == http.StatusOK
	})
	t.Logf("ready %v after the JWKS came back", time.Since(back).Round(time.Millisecond))
	if status := postAdd(t, h.URL(), signed); status != http.StatusOK {
		t.Errorf("a token once ready: %d, want 200", status)
	}
	if !strings.Contains(h.Log(), "jwks fetch failed") {
		t.Errorf("the log does not say the JWKS failed:\n%s", h.Log())
	}
	// The line is written once the keys are in use: /readyz may say so
	// first.
	testkit.WaitFor(t, "the log to say the JWKS came back", func() bool { return strings.Contains(h.Log(), "jwks fetched") })
}

// hubTool runs "hub NAME args..." and returns its stdout and whether it
// exited 0.
func hubTool(t *testing.T, args ...string) (string, bool) {
	t.Helper()
	bin, err := hubproc.Binary()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), bin, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("hub %s: %v", args[0], err)
	}
	return string(out) + stderr.String(), err == nil
}

// hub gentoken mints with the config file's key what the running hub,
// started with that file, takes; hub checktoken agrees with the hub on
// every token, taken or refused.
func TestGenTokenCheckTokenRoundTrip(t *testing.T) {
	dir := t.TempDir()
	key := testkit.WriteFile(t, filepath.Join(dir, "hub.key"), secret)
	cfg := testkit.WriteFile(t, filepath.Join(dir, "hub.yaml"), []byte("demo: true\njwt-key: "+key+"\njwt-audience: switchboard\n"))
	h := hubproc.Start(t, &hubproc.Options{Args: []string{"-config", cfg}})
	for _, tt := range []struct {
		name string
		args []string
		want int
	}{
		{"an hour", []string{"-sub", "alice"}, http.StatusOK},
		{"grants", []string{"-sub", "orders", "-publish", "orders.>", "-call", "add"}, http.StatusOK},
		{"expired", []string{"-sub", "alice", "-ttl", "-1m"}, http.StatusUnauthorized},
		{"no exp", []string{"-sub", "alice", "-ttl", "0"}, http.StatusUnauthorized},
		{"other audience", []string{"-sub", "alice", "-aud", "other"}, http.StatusUnauthorized},
	} {
		out, ok := hubTool(t, append([]string{"gentoken", "-config", cfg}, tt.args...)...)
		if !ok {
			t.Fatalf("%s: gentoken: %s", tt.name, out)
		}
		tok := strings.TrimSpace(out)
		status := postAdd(t, h.URL(), tok)
		if status != tt.want {
			t.Errorf("%s: the hub says %d, want %d", tt.name, status, tt.want)
		}
		verdict, accepted := hubTool(t, "checktoken", "-config", cfg, tok)
		if accepted != (status == http.StatusOK) {
			t.Errorf("%s: checktoken (accepted %v) disagrees with the hub (%d):\n%s", tt.name, accepted, status, verdict)
		}
	}
	if out, ok := hubTool(t, "version"); !ok || !strings.HasPrefix(out, "hub ") {
		t.Errorf("hub version: %q", out)
	}
	if status, body := get(t, h.URL()+"/healthz", ""); status != http.StatusOK || !strings.HasPrefix(body, "ok ") {
		t.Errorf("healthz: %d %q, want ok and the version", status, body)
	}
}
