package main

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

// hmacKey is the HMAC secret of the tests' JSON Web Tokens.
var hmacKey = []byte("an HMAC secret of more than 32 bytes")

// writeKey writes hmacKey to a file and returns its path.
func writeKey(t *testing.T) string {
	t.Helper()
	return testkit.WriteFile(t, filepath.Join(t.TempDir(), "hub.key"), hmacKey)
}

// signJWT returns an HS256 token signed with hmacKey, for sub, valid for
// an hour, with the extra claims.
func signJWT(t *testing.T, sub string, extra jwt.MapClaims) string {
	return testkit.HS256(t, hmacKey, sub, time.Hour, extra)
}

// postAs sends one JSON-RPC request over POST with token and returns the
// reply's body.
func postAs(t *testing.T, url, token, request string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Wait)
	defer cancel()
	status, body := testkit.Post(t, ctx, url+"/rpc", token, request)
	if status != http.StatusOK {
		t.Fatalf("POST %s: %d %s", request, status, body)
	}
	return body
}

// TestGrantsAlwaysApply: a token's "switchboard" claim restricts its peer
// whatever else decides for the others: with -demo (anyone may do
// anything), with the default policy, with -allow-provide, and with rules.
func TestGrantsAlwaysApply(t *testing.T) {
	key := writeKey(t)
	rulesFile := writeFile(t, "hub.yaml", "rules:\n  - allow: [subscribe, publish, call]\n    to: [\">\"]\n    who: authenticated\n")
	granted := signJWT(t, "alice", jwt.MapClaims{"switchboard": map[string]any{"call": []string{"add"}, "subscribe": []string{"news.*"}}})
	plain := signJWT(t, "bob", nil)
	const (
		add      = `{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}`
		subtract = `{"jsonrpc":"2.0","method":"subtract","params":[3,1],"id":1}`
		echo     = `{"jsonrpc":"2.0","method":"echo","params":["x"],"id":1}`
		news     = `{"jsonrpc":"2.0","method":"rpc.history","params":{"topic":"news.today"},"id":1}`
		other    = `{"jsonrpc":"2.0","method":"rpc.history","params":{"topic":"sports.today"},"id":1}`
		publish  = `{"jsonrpc":"2.0","method":"rpc.publish","params":{"topic":"news.today","data":1},"id":1}`
	)
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"demo", []string{"-demo"}},
		{"default policy", nil},
		{"allow-provide", []string{"-allow-provide"}},
		{"rules", []string{"-demo", "-config", rulesFile}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			url, _ := start(t, append([]string{"-jwt-key", key}, tt.args...)...)
			demo := tt.name != "default policy" && tt.name != "allow-provide"
			for _, c := range []struct {
				req     string
				allowed bool
			}{
				{add, true}, {subtract, false}, {echo, false},
				{news, true}, {other, false}, {publish, false},
			} {
				if !demo && (c.req == add || c.req == subtract || c.req == echo) {
					continue // no such methods without -demo
				}
				body := postAs(t, url, granted, c.req)
				if refused := strings.Contains(body, `"code":-32001`); refused == c.allowed {
					t.Errorf("%s with grants: %s (allowed: %v)", c.req, body, c.allowed)
				}
			}
			// A token without the claim gets what the rest allows.
			if body := postAs(t, url, plain, other); strings.Contains(body, "-32001") {
				t.Errorf("%s without grants: %s", other, body)
			}
			if demo {
				if body := postAs(t, url, plain, subtract); !strings.Contains(body, `"result":2`) {
					t.Errorf("subtract without grants: %s", body)
				}
			}
		})
	}
}
