package server_test

import (
	"context"
	"crypto"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/server"
)

// mostFetches bounds the fetches of a JWKS that failed from the start for
// d: the refresh loop's backoff (JWKSRetryMin doubling up to
// JWKSRetryMax) plus, for the tokens, one per JWKSRefetchInterval.
func mostFetches(d time.Duration) int32 {
	n := int32(1) // at start
	wait, sum := server.JWKSRetryMin, time.Duration(0)
	for sum += wait; sum <= d; sum += wait {
		n++
		wait = min(2*wait, server.JWKSRetryMax)
	}
	return n + 1 + int32(d/server.JWKSRefetchInterval)
}

// TestJWKSDownAtStart: a hub whose JWKS is down when it starts is not
// ready (/readyz 503) and refuses tokens, without a bad token making it
// hammer the JWKS; once the JWKS is back, the keys load within
// JWKSRetryMax, /readyz says 200 and tokens are accepted, with no wait
// for a refetch interval.
func TestJWKSDownAtStart(t *testing.T) {
	k := testKeys()
	doc := jwksOf(t, map[string]crypto.Signer{"k1": k["rsa"]})
	var fetches atomic.Int32
	var up atomic.Bool
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		if !up.Load() {
			http.Error(w, "down", http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(doc)
	}))
	defer jwks.Close()

	start := time.Now()
	j, err := server.NewJWT(context.Background(), &server.JWTOptions{JWKSURL: jwks.URL})
	if err != nil {
		t.Fatalf("NewJWT with the JWKS down: %v; want it to start and fetch later", err)
	}
	defer j.Close()
	ts := newTestServer(t, &server.Options{Authenticate: j.Authenticate, Ready: j.Ready})
	if err := j.Ready(); err == nil {
		t.Fatal("Ready with no keys loaded: nil")
	}
	if status, body := get(t, ts.URL+"/readyz"); status != http.StatusServiceUnavailable || !strings.Contains(body, "jwks") {
		t.Fatalf("readyz with no keys: %d %q, want 503 naming the JWKS", status, body)
	}
	tok := sign(t, "RS256", k["rsa"], "k1", claimsFor("alice", time.Minute))
	for range 50 {
		if _, err := j.Verify(t.Context(), tok); err == nil {
			t.Fatal("a token accepted with no keys loaded")
		}
	}
	if n, most := fetches.Load(), mostFetches(time.Since(start)); n > most {
		t.Errorf("%d fetches in %v with the JWKS down, want at most %d", n, time.Since(start), most)
	}
	status, body := post(t, ts.URL, "application/json", `{"jsonrpc":"2.0","method":"x","id":1}`,
		http.Header{"Authorization": {"Bearer " + tok}})
	if status != http.StatusUnauthorized {
		t.Errorf("POST with no keys: %d %s, want 401", status, body)
	}

	up.Store(true)
	back := time.Now()
	testkit.WaitFor(t, "the keys to load once the JWKS is back", func() bool { return j.Ready() == nil })
	t.Logf("keys loaded %v after the JWKS came back (at most JWKSRetryMax, %v, by design)", time.Since(back), server.JWKSRetryMax)
	if status, body := get(t, ts.URL+"/readyz"); status != http.StatusOK {
		t.Errorf("readyz with the keys loaded: %d %q", status, body)
	}
	if _, err := j.Verify(t.Context(), tok); err != nil {
		t.Errorf("a token once the keys are loaded: %v", err)
	}
}
