package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

const testSecret = "an HMAC secret of more than 32 bytes"

func hmacToken(t *testing.T, claims jwt.MapClaims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(testSecret))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A token without exp would never expire: the hub refuses it unless
// -jwt-allow-no-exp says otherwise.
func TestJWTNoExp(t *testing.T) {
	key := writeFile(t, "hub.key", testSecret)
	noExp := hmacToken(t, jwt.MapClaims{"sub": "svc"})
	withExp := hmacToken(t, jwt.MapClaims{"sub": "svc", "exp": time.Now().Add(time.Hour).Unix()})
	for _, tt := range []struct {
		args  []string
		token string
		want  int
	}{
		{nil, noExp, http.StatusUnauthorized},
		{nil, withExp, http.StatusOK},
		{[]string{"-jwt-allow-no-exp"}, noExp, http.StatusOK},
	} {
		url, _ := start(t, append([]string{"-demo", "-jwt-key", key}, tt.args...)...)
		status, body, err := postAdd(t.Context(), http.DefaultClient, url+"/rpc", "Authorization", "Bearer "+tt.token)
		if err != nil || status != tt.want {
			t.Errorf("%v: %d %s %v, want %d", tt.args, status, body, err, tt.want)
		}
	}
}

// -allow-provide with rules is ignored (the rules say who provides): the
// hub says so at start, and so does check-config.
func TestAllowProvideIgnoredWarns(t *testing.T) {
	cfg := writeFile(t, "hub.yaml", "rules:\n  - allow: [subscribe]\n    to: [\">\"]\n    who: anyone\n")
	p := startProc(t, "-config", cfg, "-allow-provide")
	p.Addr(t, "hub listening")
	log := p.Stop(t)
	if !strings.Contains(log, `"level":"warn"`) || !strings.Contains(log, "allow-provide is ignored") {
		t.Errorf("no warning that -allow-provide is ignored:\n%s", log)
	}
	var stdout, stderr strings.Builder
	if err := checkConfig([]string{cfg, "-allow-provide"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr.String(), "allow-provide is ignored") {
		t.Errorf("check-config: no warning: %q", stderr.String())
	}

	p = startProc(t, "-allow-provide") // no rules: it applies, nothing to say
	p.Addr(t, "hub listening")
	if log := p.Stop(t); strings.Contains(log, "allow-provide is ignored") {
		t.Errorf("warned without rules:\n%s", log)
	}
}

// A hub whose JWKS is down at start is not ready (/readyz 503) until the
// keys are loaded, then takes the tokens at once.
func TestReadyzWaitsForJWKS(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	jwk, err := jwkset.NewJWKFromKey(key.Public(), jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{KID: "k1"}})
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := json.Marshal(jwkset.JWKSMarshal{Keys: []jwkset.JWKMarshal{jwk.Marshal()}})
	var up atomic.Bool
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write(doc)
	}))
	defer jwks.Close()
	url, stop := start(t, "-demo", "-jwks", jwks.URL)
	defer func() { _ = stop() }() // before jwks.Close: the hub fetches until it stops

	tok := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{"sub": "alice", "exp": time.Now().Add(time.Hour).Unix()})
	tok.Header["kid"] = "k1"
	signed, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	if resp, body := httpDo(t, "GET", url+"/readyz", "", ""); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("readyz with the JWKS down: %d %q, want 503", resp.StatusCode, body)
	}
	if status, _, _ := postAdd(t.Context(), http.DefaultClient, url+"/rpc", "Authorization", "Bearer "+signed); status != http.StatusUnauthorized {
		t.Fatalf("a token with the JWKS down: %d, want 401", status)
	}
	up.Store(true)
	testkit.WaitFor(t, "/readyz to say 200 once the JWKS is up", func() bool {
		resp, _ := httpDo(t, "GET", url+"/readyz", "", "")
		return resp.StatusCode == http.StatusOK
	})
	if status, body, err := postAdd(t.Context(), http.DefaultClient, url+"/rpc", "Authorization", "Bearer "+signed); status != http.StatusOK {
		t.Errorf("a token once ready: %d %s %v", status, body, err)
	}
}
