package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
	"github.com/switchboard-rpc/switchboard/hub/rules"
	"github.com/switchboard-rpc/switchboard/internal/jwtkey"
	"go.uber.org/zap"
)

// hub gentoken and hub checktoken: a token for trying a configuration
// out, and why a configuration takes a token or not. Signing and
// verification are github.com/golang-jwt/jwt/v5's, keys are read by the
// standard library and github.com/MicahParks/jwkset; checktoken verifies
// with the hub's own verifier (server.JWT), so it says what the hub would.

// claimFlags collect -claim name=value pairs.
type claimFlags map[string]any

func (c claimFlags) String() string { return "" }

func (c claimFlags) Set(s string) error {
	name, value, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return errors.New("want name=value")
	}
	var v any
	if json.Unmarshal([]byte(value), &v) != nil { // a JSON value, or else a string
		v = value
	}
	c[name] = v
	return nil
}

// genToken is "hub gentoken": it prints a token signed with the key the
// hub's configuration names (or -key), for -sub, valid for -ttl.
func genToken(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("hub gentoken", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", "", "the hub's config `file`, for jwt-key, jwt-audience and jwt-issuer (SWITCHBOARD_* variables apply too)")
	keyFile := fs.String("key", "", "sign with the key in this `file` (default: the config's jwt-key): an HMAC secret's raw bytes, a PEM private key (RSA, EC, Ed25519), or a JWKS document holding private or oct keys")
	sub := fs.String("sub", "", "the token's user (the sub claim; required)")
	ttl := fs.Duration("ttl", time.Hour, "how long the token is valid (the exp claim; negative: expired already; 0: no exp, which the hub refuses unless -jwt-allow-no-exp)")
	alg := fs.String("alg", "", "the signing `algorithm` (default: the key's: HS256, RS256, ES256, ES384 or EdDSA)")
	kid := fs.String("kid", "", "the key's `id` in the header; with a JWKS key file, which key signs (default: its first)")
	aud := fs.String("aud", "", "the aud claim (default: the config's jwt-audience)")
	iss := fs.String("iss", "", "the iss claim (default: the config's jwt-issuer)")
	grants := fs.String("grants", "", "the switchboard claim as `JSON`: {\"subscribe\": [...], \"publish\": [...], \"provide\": [...], \"call\": [...], \"address\": [...]}")
	var lists [5]string
	for i, name := range []string{"subscribe", "publish", "provide", "call", "address"} {
		fs.StringVar(&lists[i], name, "", "comma-separated `patterns` granted for "+name+" (the switchboard claim)")
	}
	claims := claimFlags{}
	fs.Var(claims, "claim", "another claim, `name=value` (a JSON value, or else a string); repeatable: -claim role=backend")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("gentoken: unexpected arguments: %q", fs.Args())
	}
	if *sub == "" {
		return errors.New("gentoken: -sub is required")
	}
	var hubArgs []string
	if *config != "" {
		hubArgs = []string{"-config", *config}
	}
	c, err := parseFlags(hubArgs, stderr)
	if err != nil {
		return err
	}
	if *keyFile == "" {
		if c.identity.jwtKey == "" {
			return errors.New("gentoken: no key: the configuration has no jwt-key (with a JWKS URL, pass -key with a private key of that set)")
		}
		*keyFile = c.identity.jwtKey
	}
	raw, err := os.ReadFile(*keyFile)
	if err != nil {
		return fmt.Errorf("gentoken: %w", err)
	}
	key, keyAlg, keyID, err := signingKey(raw, *kid)
	if err != nil {
		return fmt.Errorf("gentoken: %s: %w", *keyFile, err)
	}
	if *alg == "" {
		*alg = keyAlg
	}
	method := jwt.GetSigningMethod(*alg)
	if method == nil {
		return fmt.Errorf("gentoken: unknown algorithm %q", *alg)
	}

	now := time.Now()
	claims["sub"] = *sub
	claims["iat"] = now.Unix()
	if *ttl != 0 {
		claims["exp"] = now.Add(*ttl).Unix()
	}
	for name, v := range map[string]string{"aud": first(*aud, c.identity.audience), "iss": first(*iss, c.identity.issuer)} {
		if v != "" {
			claims[name] = v
		}
	}
	g, err := grantsOf(*grants, lists)
	if err != nil {
		return fmt.Errorf("gentoken: %w", err)
	}
	if g != nil {
		claims["switchboard"] = g
	}
	tok := jwt.NewWithClaims(method, jwt.MapClaims(claims))
	if keyID != "" {
		tok.Header["kid"] = keyID
	}
	s, err := tok.SignedString(key)
	if err != nil {
		return fmt.Errorf("gentoken: %w", err)
	}
	_, err = fmt.Fprintln(stdout, s)
	return err
}

func first(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// grantsOf builds the switchboard claim from -grants and the list flags
// (subscribe, publish, provide, call, address), checked as the hub checks
// it; nil when none is given.
func grantsOf(js string, lists [5]string) (json.RawMessage, error) {
	g := map[string]any{}
	if js != "" {
		if err := json.Unmarshal([]byte(js), &g); err != nil {
			return nil, fmt.Errorf("-grants: %w", err)
		}
	}
	for i, name := range []string{"subscribe", "publish", "provide", "call", "address"} {
		if lists[i] != "" {
			g[name] = splitList(lists[i])
		}
	}
	if len(g) == 0 {
		return nil, nil
	}
	raw, err := json.Marshal(g)
	if err != nil {
		return nil, err
	}
	if _, err := rules.ParseGrants(raw); err != nil {
		return nil, err
	}
	return raw, nil
}

// signingKey reads a key to sign with from a file's bytes, as the hub
// reads its -jwt-key but private: an HMAC secret (at least 32 bytes), a
// PEM private key, or a JWKS document (the key kid names, or its first
// that can sign). It returns the key, its algorithm and its kid.
func signingKey(b []byte, kid string) (key any, alg, keyID string, err error) {
	trimmed := bytes.TrimSpace(b)
	switch {
	case bytes.HasPrefix(trimmed, []byte("{")):
		var doc jwkset.JWKSMarshal
		if err := json.Unmarshal(trimmed, &doc); err != nil {
			return nil, "", "", fmt.Errorf("not a JWKS document: %w", err)
		}
		for _, m := range doc.Keys {
			if kid != "" && m.KID != kid {
				continue
			}
			jwk, err := jwkset.NewJWKFromMarshal(m, jwkset.JWKMarshalOptions{Private: true}, jwkset.JWKValidateOptions{})
			if err != nil {
				continue
			}
			if alg := jwtkey.SigningAlg(jwk.Key()); alg != "" {
				return jwk.Key(), alg, m.KID, nil
			}
		}
		return nil, "", "", errors.New("the JWKS document holds no key that can sign (an oct key or a private key)" + ifKid(kid))
	case bytes.HasPrefix(trimmed, []byte("-----BEGIN")):
		if key, err = jwtkey.PEM(trimmed, true); err != nil {
			return nil, "", "", err
		}
		return key, jwtkey.SigningAlg(key), kid, nil
	default:
		if len(b) < 32 {
			return nil, "", "", fmt.Errorf("an HMAC secret needs at least 32 bytes, the file has %d", len(b))
		}
		return b, "HS256", kid, nil
	}
}

func ifKid(kid string) string {
	if kid == "" {
		return ""
	}
	return fmt.Sprintf(" with kid %q", kid)
}

// errRefused ends checktoken with a non-zero status.
var errRefused = errors.New("the token is refused")

// checkToken is "hub checktoken [flags] TOKEN": it says whether the hub,
// run with these flags (-config FILE, ...), accepts the token, and why.
// TOKEN "-" reads it from stdin.
func checkToken(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (strings.HasPrefix(args[len(args)-1], "-") && args[len(args)-1] != "-") {
		fmt.Fprintln(stderr, "usage: hub checktoken [-config FILE] [flags] TOKEN (- reads it from stdin)")
		return errors.New("checktoken needs a token")
	}
	tok := args[len(args)-1]
	if tok == "-" {
		line, err := bufio.NewReader(os.Stdin).ReadString('\n')
		if err != nil && line == "" {
			return fmt.Errorf("checktoken: reading the token: %w", err)
		}
		tok = strings.TrimSpace(line)
	}
	c, err := parseFlags(args[:len(args)-1], stderr)
	if err != nil {
		return err
	}
	if c.tokenFile != "" {
		tokens, err := readTokens(c.tokenFile)
		if err != nil {
			return err
		}
		if id, ok := tokens[tok]; ok {
			fmt.Fprintf(stdout, "accepted: a static token of %s, identity %q (judged by the rules)\n", c.tokenFile, id)
			return nil
		}
	}
	if !c.identity.usesJWT() {
		fmt.Fprintln(stdout, "refused: not a token of the token file, and no jwt-key or jwks is configured")
		return errRefused
	}
	describeToken(stdout, tok, c.identity.audience, c.identity.issuer)
	j, err := c.identity.verifier(ctx, zap.NewNop())
	if err != nil {
		return err
	}
	defer j.Close()
	t, err := j.Verify(ctx, tok)
	if err != nil {
		fmt.Fprintf(stdout, "refused: %v\n", err)
		return errRefused
	}
	how := "judged by the rules (no switchboard claim)"
	if t.Grants != nil {
		how = "with exactly its grants (switchboard claim)"
	}
	fmt.Fprintf(stdout, "accepted: user %q, %s\n", t.Subject, how)
	return nil
}

// describeToken prints what a token says, unverified, claim by claim,
// against what the configuration requires: the verdict comes after, from
// the hub's verifier.
func describeToken(w io.Writer, tok, aud, iss string) {
	var claims jwt.MapClaims
	t, _, err := jwt.NewParser().ParseUnverified(tok, &claims)
	if err != nil {
		fmt.Fprintf(w, "token:   unreadable: %v\n", err)
		return
	}
	kid, _ := t.Header["kid"].(string)
	fmt.Fprintf(w, "header:  alg %v, kid %q\n", t.Header["alg"], kid)
	sub, _ := claims.GetSubject()
	fmt.Fprintf(w, "sub:     %q\n", sub)
	now := time.Now()
	for _, c := range []struct {
		name string
		get  func() (*jwt.NumericDate, error)
	}{{"exp", claims.GetExpirationTime}, {"nbf", claims.GetNotBefore}, {"iat", claims.GetIssuedAt}} {
		d, err := c.get()
		switch {
		case err != nil:
			fmt.Fprintf(w, "%-8s %v\n", c.name+":", err)
		case d == nil && c.name == "exp":
			fmt.Fprintf(w, "exp:     none: the token would never expire (refused unless jwt-allow-no-exp)\n")
		case d == nil:
			fmt.Fprintf(w, "%-8s none\n", c.name+":")
		case d.After(now):
			fmt.Fprintf(w, "%-8s %s (in %s)\n", c.name+":", d.UTC().Format(time.RFC3339), d.Sub(now).Round(time.Second))
		default:
			fmt.Fprintf(w, "%-8s %s (%s ago)\n", c.name+":", d.UTC().Format(time.RFC3339), now.Sub(d.Time).Round(time.Second))
		}
	}
	auds, _ := claims.GetAudience()
	fmt.Fprintf(w, "aud:     %q%s\n", []string(auds), required(aud))
	gotIss, _ := claims.GetIssuer()
	fmt.Fprintf(w, "iss:     %q%s\n", gotIss, required(iss))
	if g, ok := claims["switchboard"]; ok {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(g)
		raw := bytes.TrimSpace(buf.Bytes())
		if _, err := rules.ParseGrants(raw); err != nil {
			fmt.Fprintf(w, "grants:  %s: %v\n", raw, err)
		} else {
			fmt.Fprintf(w, "grants:  %s\n", raw)
		}
	} else {
		fmt.Fprintln(w, "grants:  none (the rules decide)")
	}
}

func required(v string) string {
	if v == "" {
		return ""
	}
	return fmt.Sprintf(" (required: %q)", v)
}
