package server_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
	"github.com/switchboard-rpc/switchboard/hub/rules"
	"github.com/switchboard-rpc/switchboard/server"
)

// testKeys are one key of each kind the hub accepts, made once.
var testKeys = sync.OnceValue(func() map[string]crypto.Signer {
	r, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	return map[string]crypto.Signer{"rsa": r, "p256": p256, "p384": p384, "ed": ed}
})

var hmacSecret = []byte("0123456789abcdef0123456789abcdef-test-secret")

func pemOf(t testing.TB, k crypto.Signer) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(k.Public())
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// sign makes a token of claims, signed with key by alg; kid, if set, goes
// into the header.
func sign(t testing.TB, alg string, key any, kid string, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.GetSigningMethod(alg), claims)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func claimsFor(sub string, ttl time.Duration) jwt.MapClaims {
	return jwt.MapClaims{"sub": sub, "exp": time.Now().Add(ttl).Unix()}
}

func newJWT(t testing.TB, o *server.JWTOptions) *server.JWT {
	t.Helper()
	j, err := server.NewJWT(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func TestJWTAlgorithms(t *testing.T) {
	k := testKeys()
	tests := []struct {
		alg      string
		key      []byte // the hub's key file
		signWith any
	}{
		{"HS256", hmacSecret, hmacSecret},
		{"HS384", hmacSecret, hmacSecret},
		{"HS512", hmacSecret, hmacSecret},
		{"RS256", pemOf(t, k["rsa"]), k["rsa"]},
		{"RS384", pemOf(t, k["rsa"]), k["rsa"]},
		{"RS512", pemOf(t, k["rsa"]), k["rsa"]},
		{"PS256", pemOf(t, k["rsa"]), k["rsa"]},
		{"ES256", pemOf(t, k["p256"]), k["p256"]},
		{"ES384", pemOf(t, k["p384"]), k["p384"]},
		{"EdDSA", pemOf(t, k["ed"]), k["ed"]},
	}
	for _, tt := range tests {
		t.Run(tt.alg, func(t *testing.T) {
			j := newJWT(t, &server.JWTOptions{Key: tt.key})
			got, err := j.Verify(t.Context(), sign(t, tt.alg, tt.signWith, "", claimsFor("alice", time.Minute)))
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if got.Subject != "alice" || time.Until(got.Expires) <= 0 || got.Grants != nil {
				t.Errorf("Verify = %+v", got)
			}
		})
	}
}

func TestJWTRefused(t *testing.T) {
	k := testKeys()
	rsaPEM := pemOf(t, k["rsa"])
	hmac := newJWT(t, &server.JWTOptions{Key: hmacSecret})
	rsaJ := newJWT(t, &server.JWTOptions{Key: rsaPEM})
	p256 := newJWT(t, &server.JWTOptions{Key: pemOf(t, k["p256"])})
	checked := newJWT(t, &server.JWTOptions{Key: hmacSecret, Audience: "switchboard", Issuer: "https://login.example"})
	good := claimsFor("alice", time.Minute)
	with := func(extra jwt.MapClaims) jwt.MapClaims {
		c := jwt.MapClaims{}
		for k, v := range good {
			c[k] = v
		}
		for k, v := range extra {
			c[k] = v
		}
		return c
	}
	none, err := jwt.NewWithClaims(jwt.SigningMethodNone, good).SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}
	hsToken := sign(t, "HS256", hmacSecret, "", good)
	tests := []struct {
		name  string
		j     *server.JWT
		token string
	}{
		{"alg none", hmac, none},
		{"HS256 signed with the RSA public key", rsaJ, sign(t, "HS256", rsaPEM, "", good)},
		{"RS256 against an HMAC key", hmac, sign(t, "RS256", k["rsa"], "", good)},
		{"ES384 against a P-256 key", p256, sign(t, "ES384", k["p384"], "", good)},
		{"EdDSA against an RSA key", rsaJ, sign(t, "EdDSA", k["ed"], "", good)},
		{"bad signature", hmac, hsToken[:len(hsToken)-4] + "AAAA"},
		{"other secret", hmac, sign(t, "HS256", []byte("another secret of at least 32 bytes!"), "", good)},
		{"malformed", hmac, "not.a.token"},
		{"two parts", hmac, "abc.def"},
		{"expired", hmac, sign(t, "HS256", hmacSecret, "", claimsFor("alice", -time.Second))},
		{"nbf ahead", hmac, sign(t, "HS256", hmacSecret, "", with(jwt.MapClaims{"nbf": time.Now().Add(2 * time.Minute).Unix()}))},
		{"no sub", hmac, sign(t, "HS256", hmacSecret, "", jwt.MapClaims{"exp": time.Now().Add(time.Minute).Unix()})},
		{"bad grants", hmac, sign(t, "HS256", hmacSecret, "", with(jwt.MapClaims{"switchboard": "all"}))},
		{"no aud", checked, sign(t, "HS256", hmacSecret, "", with(jwt.MapClaims{"iss": "https://login.example"}))},
		{"wrong aud", checked, sign(t, "HS256", hmacSecret, "", with(jwt.MapClaims{"aud": "other", "iss": "https://login.example"}))},
		{"wrong iss", checked, sign(t, "HS256", hmacSecret, "", with(jwt.MapClaims{"aud": "switchboard", "iss": "https://evil.example"}))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, err := tt.j.Verify(t.Context(), tt.token); err == nil {
				t.Fatalf("Verify accepted it: %+v", got)
			} else if strings.Contains(err.Error(), tt.token) {
				t.Errorf("the error shows the token: %v", err)
			}
		})
	}
	t.Run("nbf within the leeway", func(t *testing.T) {
		if _, err := hmac.Verify(t.Context(), sign(t, "HS256", hmacSecret, "", with(jwt.MapClaims{"nbf": time.Now().Add(10 * time.Second).Unix()}))); err != nil {
			t.Error(err)
		}
	})
	t.Run("aud and iss right", func(t *testing.T) {
		if _, err := checked.Verify(t.Context(), sign(t, "HS256", hmacSecret, "", with(jwt.MapClaims{"aud": []string{"x", "switchboard"}, "iss": "https://login.example"}))); err != nil {
			t.Error(err)
		}
	})
	t.Run("no exp", func(t *testing.T) {
		noExp := sign(t, "HS256", hmacSecret, "", jwt.MapClaims{"sub": "svc"})
		if got, err := hmac.Verify(t.Context(), noExp); !errors.Is(err, server.ErrNoExp) {
			t.Errorf("Verify = %+v, %v; want ErrNoExp: a token without exp would never expire", got, err)
		}
		allow := newJWT(t, &server.JWTOptions{Key: hmacSecret, AllowNoExp: true})
		if got, err := allow.Verify(t.Context(), noExp); err != nil || !got.Expires.IsZero() {
			t.Errorf("AllowNoExp: Verify = %+v, %v", got, err)
		}
	})
}

func TestJWTKeyFile(t *testing.T) {
	for _, bad := range []string{"short secret", `{"keys": []}`, "-----BEGIN PUBLIC KEY-----\nnope\n-----END PUBLIC KEY-----\n"} {
		if _, err := server.NewJWT(t.Context(), &server.JWTOptions{Key: []byte(bad)}); err == nil {
			t.Errorf("NewJWT(%q) accepted it", bad)
		}
	}
	priv, err := x509.MarshalPKCS8PrivateKey(testKeys()["p256"])
	if err != nil {
		t.Fatal(err)
	}
	_, err = server.NewJWT(t.Context(), &server.JWTOptions{Key: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: priv})})
	if err == nil || !strings.Contains(err.Error(), "public key only") {
		t.Errorf("a private key file: %v", err)
	}
}

// jwksOf returns the JWKS document of keys, by kid.
func jwksOf(t testing.TB, keys map[string]crypto.Signer) []byte {
	t.Helper()
	var doc jwkset.JWKSMarshal
	for kid, k := range keys {
		jwk, err := jwkset.NewJWKFromKey(k.Public(), jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{KID: kid}})
		if err != nil {
			t.Fatal(err)
		}
		doc.Keys = append(doc.Keys, jwk.Marshal())
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestJWTKeySetFile(t *testing.T) {
	k := testKeys()
	j := newJWT(t, &server.JWTOptions{Key: jwksOf(t, map[string]crypto.Signer{"r1": k["rsa"], "e1": k["p256"]})})
	for _, tok := range []string{
		sign(t, "RS256", k["rsa"], "r1", claimsFor("alice", time.Minute)),
		sign(t, "ES256", k["p256"], "e1", claimsFor("alice", time.Minute)),
		sign(t, "ES256", k["p256"], "", claimsFor("alice", time.Minute)), // no kid: any key that fits
	} {
		if _, err := j.Verify(t.Context(), tok); err != nil {
			t.Error(err)
		}
	}
	for name, tok := range map[string]string{
		"unknown kid":                        sign(t, "RS256", k["rsa"], "r2", claimsFor("alice", time.Minute)),
		"kid of an EC key, RSA alg":          sign(t, "RS256", k["rsa"], "e1", claimsFor("alice", time.Minute)),
		"HS256 with the set's key as secret": sign(t, "HS256", jwksOf(t, map[string]crypto.Signer{"r1": k["rsa"]}), "r1", claimsFor("alice", time.Minute)),
	} {
		if _, err := j.Verify(t.Context(), tok); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestJWKSURL rotates keys behind a JWKS URL: an unknown kid fetches the
// set again, at most once per JWKSRefetchInterval, and the keys last
// fetched stay in use while the URL is down.
func TestJWKSURL(t *testing.T) {
	k := testKeys()
	var fetches atomic.Int32
	var down atomic.Bool
	var mu sync.Mutex
	doc := jwksOf(t, map[string]crypto.Signer{"k1": k["rsa"]})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		if down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(doc)
	}))
	defer ts.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	j, err := server.NewJWT(ctx, &server.JWTOptions{JWKSURL: ts.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if err := j.Ready(); err != nil {
		t.Errorf("Ready with the keys loaded: %v", err)
	}
	if _, err := j.Verify(t.Context(), sign(t, "RS256", k["rsa"], "k1", claimsFor("alice", time.Minute))); err != nil {
		t.Fatalf("k1: %v", err)
	}
	if n := fetches.Load(); n != 1 {
		t.Fatalf("%d fetches at start, want 1", n)
	}

	mu.Lock()
	doc = jwksOf(t, map[string]crypto.Signer{"k1": k["rsa"], "k2": k["p256"]}) // rotation: k2 added
	mu.Unlock()
	if _, err := j.Verify(t.Context(), sign(t, "ES256", k["p256"], "k2", claimsFor("alice", time.Minute))); err != nil {
		t.Fatalf("k2 after rotation: %v", err)
	}
	if n := fetches.Load(); n != 2 {
		t.Fatalf("%d fetches after an unknown kid, want 2", n)
	}
	start := time.Now()
	for range 50 { // made-up kids: one fetch per interval at most
		if _, err := j.Verify(t.Context(), sign(t, "ES256", k["p256"], "bogus", claimsFor("alice", time.Minute))); err == nil {
			t.Fatal("unknown kid accepted")
		}
	}
	if n, most := fetches.Load(), 2+int32(time.Since(start)/server.JWKSRefetchInterval); n > most {
		t.Errorf("%d fetches after 50 made-up kids, want at most %d", n, most)
	}

	down.Store(true)
	if _, err := j.Verify(t.Context(), sign(t, "ES256", k["p256"], "k2", claimsFor("alice", time.Minute))); err != nil {
		t.Errorf("k2 while the URL is down: %v", err)
	}
	if err := j.Ready(); err != nil {
		t.Errorf("Ready while the URL is down, with the keys held: %v", err)
	}
}

func TestJWTAuthenticate(t *testing.T) {
	j := newJWT(t, &server.JWTOptions{Key: hmacSecret})
	r := httptest.NewRequest("GET", "/rpc", nil)
	if _, err := j.Authenticate(r); !errors.Is(err, server.ErrUnauthorized) {
		t.Errorf("no token: %v", err)
	}
	r.Header.Set("Authorization", "Bearer "+sign(t, "HS256", hmacSecret, "", jwt.MapClaims{
		"sub": "alice", "role": "backend", "exp": time.Now().Add(time.Minute).Unix(), "switchboard": map[string]any{"publish": []string{"orders.>"}},
	}))
	got, err := j.Authenticate(r)
	if err != nil {
		t.Fatal(err)
	}
	id, ok := got.(*rules.Identity)
	if !ok || id.String() != "alice" || id.Token().Claims["role"] != "backend" || id.Token().Grants == nil || id.Token().Grants.Publish[0] != "orders.>" {
		t.Errorf("identity %#v", got)
	}
}
