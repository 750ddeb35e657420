package main

import (
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
	"flag"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/MicahParks/jwkset"
	"go.yaml.in/yaml/v3"
)

// hub -h lists the subcommands, and no flag's placeholder is a verb.
func TestHelp(t *testing.T) {
	var out strings.Builder
	if _, err := parseFlags([]string{"-h"}, &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v", err)
	}
	for _, cmd := range []string{"check-config", "genconfig", "gentoken", "checktoken", "version"} {
		if !strings.Contains(out.String(), "\n  "+cmd+" ") {
			t.Errorf("hub -h does not list %s:\n%s", cmd, out.String())
		}
	}
	if m := regexp.MustCompile(`(?m)^  -\S+ (take|finish|arrive)$`).FindString(out.String()); m != "" {
		t.Errorf("a flag's placeholder is a verb: %q", m)
	}
}

// hub version prints the stamped version, and /healthz says it too.
func TestVersion(t *testing.T) {
	old := version
	version = "v9.8.7-test"
	defer func() { version = old }()
	var out strings.Builder
	if err := runVersion(t.Context(), nil, &out, &out); err != nil || !strings.HasPrefix(out.String(), "hub v9.8.7-test (go") {
		t.Errorf("hub version: %q, %v", out.String(), err)
	}
	url, _ := start(t)
	if resp, body := httpDo(t, "GET", url+"/healthz", "", ""); resp.StatusCode != 200 || body != "ok v9.8.7-test\n" {
		t.Errorf("healthz: %d %q, want \"ok v9.8.7-test\"", resp.StatusCode, body)
	}
	version = ""
	if v := hubVersion(); v == "" {
		t.Error("unstamped: empty version")
	}
}

func isFlag(name string) bool {
	c, err := parseFlags(nil, io.Discard)
	return err == nil && c.flags.Lookup(name) != nil
}

// commentedSetting is a line of genconfig's commented defaults ("# name:
// value"), or a comment that looks like one.
var commentedSetting = regexp.MustCompile(`(?m)^# ([a-z0-9-]+): `)

// What hub genconfig prints is a config file the hub loads as it is, and
// with every commented default set; it holds every key of
// docs/hub.example.yaml.
func TestGenConfig(t *testing.T) {
	var out, errs strings.Builder
	if err := genConfig(t.Context(), nil, &out, &errs); err != nil {
		t.Fatalf("genconfig: %v %s", err, errs.String())
	}
	const marker = "# Every other setting, at its default.\n"
	head, defaults, ok := strings.Cut(out.String(), marker)
	if !ok {
		t.Fatalf("no %q in:\n%s", marker, out.String())
	}
	for name, text := range map[string]string{
		"as printed": out.String(),
		"every default set": head + marker + commentedSetting.ReplaceAllStringFunc(defaults, func(m string) string {
			if name := strings.TrimSuffix(strings.TrimPrefix(m, "# "), ": "); isFlag(name) {
				return name + ": "
			}
			return m
		}),
	} {
		file := writeFile(t, "hub.yaml", text)
		c, err := parseFlags([]string{"-config", file}, &errs)
		if err != nil {
			t.Errorf("%s: the hub refuses it: %v", name, err)
			continue
		}
		if set, err := c.identity.ruleSet(); err != nil || set == nil {
			t.Errorf("%s: rules %v, %v", name, set, err)
		}
		var stdout strings.Builder
		if err := checkConfig([]string{file}, &stdout, &errs); err != nil && !strings.Contains(err.Error(), "hub.key") {
			t.Errorf("%s: check-config: %v", name, err) // the key file is the user's to write
		}
	}
	example, err := os.ReadFile("../../docs/hub.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]any
	if err := yaml.Unmarshal(example, &keys); err != nil {
		t.Fatal(err)
	}
	for k := range keys {
		if !regexp.MustCompile(`(?m)^(# )?` + regexp.QuoteMeta(k) + `:`).MatchString(out.String()) {
			t.Errorf("docs/hub.example.yaml sets %s; genconfig does not show it", k)
		}
	}
}

// pemPair writes a signer's private key (PKCS #8) and public key as PEM
// files and returns their paths.
func pemPair(t *testing.T, k crypto.Signer) (private, public string) {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(k.Public())
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, "private.pem", string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))),
		writeFile(t, "public.pem", string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})))
}

// octJWKS is a JWKS document of HMAC secrets, by kid: how a hub rotates
// an HMAC key (two keys while tokens of the old one live on).
func octJWKS(t *testing.T, secrets map[string]string) string {
	t.Helper()
	var doc jwkset.JWKSMarshal
	for kid, s := range secrets {
		jwk, err := jwkset.NewJWKFromKey([]byte(s), jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{KID: kid}, Marshal: jwkset.JWKMarshalOptions{Private: true}})
		if err != nil {
			t.Fatal(err)
		}
		doc.Keys = append(doc.Keys, jwk.Marshal())
	}
	b, _ := json.Marshal(doc)
	return writeFile(t, "keys.json", string(b))
}

func gentoken(t *testing.T, args ...string) string {
	t.Helper()
	var out, errs strings.Builder
	if err := genToken(t.Context(), args, &out, &errs); err != nil {
		t.Fatalf("gentoken %q: %v %s", args, err, errs.String())
	}
	return strings.TrimSpace(out.String())
}

func checktoken(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errs strings.Builder
	err := checkToken(t.Context(), args, &out, &errs)
	return out.String() + errs.String(), err
}

// hub gentoken mints what hub checktoken accepts, for each kind of key;
// checktoken says why it refuses what it refuses.
func TestGenTokenCheckToken(t *testing.T) {
	secret := writeFile(t, "hub.key", testSecret)
	cfg := writeFile(t, "hub.yaml", "jwt-key: "+secret+"\njwt-audience: switchboard\n")
	tok := gentoken(t, "-config", cfg, "-sub", "alice", "-subscribe", "user.alice.>", "-claim", "role=backend")
	out, err := checktoken(t, "-config", cfg, tok)
	if err != nil || !strings.Contains(out, `accepted: user "alice"`) || !strings.Contains(out, `grants:  {"subscribe":["user.alice.>"]}`) ||
		!strings.Contains(out, `aud:     ["switchboard"] (required: "switchboard")`) {
		t.Errorf("checktoken of gentoken's token: %v\n%s", err, out)
	}

	for name, tt := range map[string]struct {
		args []string
		want string
	}{
		"expired":   {[]string{"-ttl", "-1m"}, "token is expired"},
		"no exp":    {[]string{"-ttl", "0"}, "token has no exp"},
		"other aud": {[]string{"-aud", "other"}, "invalid audience"},
	} {
		tok := gentoken(t, append([]string{"-config", cfg, "-sub", "bob"}, tt.args...)...)
		if out, err := checktoken(t, "-config", cfg, tok); err == nil || !strings.Contains(out, "refused: ") || !strings.Contains(out, tt.want) {
			t.Errorf("%s: %v\n%s", name, err, out)
		}
	}
	if out, err := checktoken(t, "-config", cfg, "-jwt-allow-no-exp", gentoken(t, "-config", cfg, "-sub", "svc", "-ttl", "0")); err != nil {
		t.Errorf("no exp with -jwt-allow-no-exp: %v\n%s", err, out)
	}
	other := writeFile(t, "other.key", "another HMAC secret of more than 32 bytes")
	if out, err := checktoken(t, "-config", cfg, gentoken(t, "-key", other, "-sub", "eve", "-aud", "switchboard")); err == nil || !strings.Contains(out, "signature is invalid") {
		t.Errorf("signed with another key: %v\n%s", err, out)
	}
	if _, err := checktoken(t, "-config", cfg, "-grants"); err == nil {
		t.Error("no token: accepted")
	}

	// Private keys: the hub holds the public one.
	r, _ := rsa.GenerateKey(rand.Reader, 2048)
	ec, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	for name, k := range map[string]crypto.Signer{"RSA": r, "EC P-384": ec, "Ed25519": ed} {
		private, public := pemPair(t, k)
		tok := gentoken(t, "-key", private, "-sub", "alice")
		if out, err := checktoken(t, "-jwt-key", public, tok); err != nil {
			t.Errorf("%s: %v\n%s", name, err, out)
		}
		var out, errs strings.Builder
		if err := genToken(t.Context(), []string{"-key", public, "-sub", "alice"}, &out, &errs); err == nil || !strings.Contains(err.Error(), "private key") {
			t.Errorf("%s: gentoken with the public key: %v", name, err)
		}
	}

	// HMAC rotation: a JWKS of two oct keys; the kid picks the secret.
	keys := octJWKS(t, map[string]string{"old": testSecret, "new": "the next HMAC secret, also 32 bytes or more"})
	for _, kid := range []string{"old", "new"} {
		tok := gentoken(t, "-key", keys, "-kid", kid, "-sub", "alice")
		if out, err := checktoken(t, "-jwt-key", keys, tok); err != nil || !strings.Contains(out, `kid "`+kid+`"`) {
			t.Errorf("kid %s: %v\n%s", kid, err, out)
		}
	}
}

// A token from hub gentoken opens a running hub configured with the same
// file.
func TestGenTokenAgainstHub(t *testing.T) {
	secret := writeFile(t, "hub.key", testSecret)
	cfg := writeFile(t, "hub.yaml", "demo: true\njwt-key: "+secret+"\njwt-audience: switchboard\n")
	url, _ := start(t, "-config", cfg)
	tok := gentoken(t, "-config", cfg, "-sub", "alice")
	if status, body, err := postAdd(t.Context(), http.DefaultClient, url+"/rpc", "Authorization", "Bearer "+tok); status != http.StatusOK {
		t.Errorf("POST with gentoken's token: %d %s %v", status, body, err)
	}
	if status, _, _ := postAdd(t.Context(), http.DefaultClient, url+"/rpc", "Authorization", "Bearer "+gentoken(t, "-config", cfg, "-sub", "alice", "-ttl", "0")); status != http.StatusUnauthorized {
		t.Errorf("POST with a token without exp: %d, want 401", status)
	}
}
