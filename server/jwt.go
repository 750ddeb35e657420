package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"github.com/switchboard-rpc/switchboard/hub/rules"
	"github.com/switchboard-rpc/switchboard/internal/jwtkey"
	"go.uber.org/zap"
)

// JWT verification (docs/security.md, "Identity and rules"):
// github.com/golang-jwt/jwt/v5 parses and verifies tokens,
// github.com/MicahParks/keyfunc/v3 looks keys up in a key set (jwks.go
// keeps a JWKS URL's set fresh). This file ties the algorithms to the key
// and turns the claims into a rules.Token.

// JWTOptions configures a [JWT] verifier. Key or JWKSURL is required, not
// both.
type JWTOptions struct {
	// Key is the verification key, as a file holds it: an HMAC secret's
	// raw bytes (at least 32), a PEM public key (RSA, EC or Ed25519, as
	// "PUBLIC KEY", "RSA PUBLIC KEY" or a "CERTIFICATE"), or a JWKS
	// document ({"keys": [...]}), whose keys are chosen by "kid".
	Key []byte

	// JWKSURL is fetched for a key set, then again every
	// [JWKSRefreshInterval], and at once (at most every
	// [JWKSRefetchInterval]) when a token names a "kid" it does not hold.
	// While no fetch has succeeded, it is fetched again on a backoff of
	// [JWKSRetryMin] to [JWKSRetryMax], every token is refused and
	// [JWT.Ready] says so. When the URL is down, the keys last fetched
	// stay in use.
	JWKSURL string

	// HTTPClient fetches JWKSURL. Nil: http.DefaultClient.
	HTTPClient *http.Client

	// Audience and Issuer, if set, are required of the "aud" and "iss"
	// claims.
	Audience, Issuer string

	// AllowNoExp accepts tokens without an "exp" claim, which then never
	// expire. Off, such a token is refused.
	AllowNoExp bool

	// Logger receives failed JWKS fetches (Warn). Nil discards them.
	Logger *zap.Logger
}

const (
	// JWKSRefreshInterval is how often a JWKS URL is fetched again.
	JWKSRefreshInterval = 10 * time.Minute
	// JWKSRefetchInterval is how often, at most, a token naming an unknown
	// "kid" (or any token, while no keys are loaded) makes the hub fetch
	// the JWKS URL before its time: a stream of tokens with made-up kids
	// costs one fetch per interval.
	JWKSRefetchInterval = 5 * time.Second
	// JWTLeeway is how far ahead of the hub's clock a token's "nbf" may
	// be, for clocks that disagree a little ("iat" is not checked). "exp"
	// is exact: a connection closes when it passes.
	JWTLeeway = 30 * time.Second
)

// jwtAlgs are the algorithms the hub accepts, each for one kind of key.
var jwtAlgs = []string{"HS256", "HS384", "HS512", "RS256", "RS384", "RS512", "PS256", "ES256", "ES384", "EdDSA"}

// JWT verifies JSON Web Tokens. It is safe for concurrent use.
type JWT struct {
	key        any             // a fixed key: []byte or a public key
	set        keyfunc.Keyfunc // or a key set, chosen by kid
	remote     *jwks           // or a JWKS URL's set
	parser     *jwt.Parser
	allowNoExp bool
}

// NewJWT returns a verifier for the key or key set o names. With a
// JWKSURL it fetches the set once before returning (a failure is logged,
// not returned: the set is fetched again, promptly, until it comes; see
// [JWT.Ready]), and refreshes it until ctx ends or [JWT.Close].
func NewJWT(ctx context.Context, o *JWTOptions) (*JWT, error) {
	log := o.Logger
	if log == nil {
		log = zap.NewNop()
	}
	opts := []jwt.ParserOption{jwt.WithValidMethods(jwtAlgs), jwt.WithLeeway(JWTLeeway)}
	if o.Audience != "" {
		opts = append(opts, jwt.WithAudience(o.Audience))
	}
	if o.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(o.Issuer))
	}
	j := &JWT{parser: jwt.NewParser(opts...), allowNoExp: o.AllowNoExp}
	var err error
	switch {
	case len(o.Key) > 0 && o.JWKSURL != "":
		return nil, errors.New("jwt: a key or a JWKS URL, not both")
	case o.JWKSURL != "":
		u, err := url.ParseRequestURI(o.JWKSURL)
		if err != nil {
			return nil, fmt.Errorf("jwt: JWKS URL: %w", err)
		}
		j.remote = newJWKS(ctx, u, o.HTTPClient, log)
	case len(o.Key) > 0:
		err = j.readKey(o.Key)
	default:
		return nil, errors.New("jwt: no key")
	}
	if err != nil {
		return nil, fmt.Errorf("jwt: %w", err)
	}
	return j, nil
}

// Ready says whether the verifier can accept tokens: nil with a key, or
// once a JWKS URL's keys are loaded (an error before). It suits
// Options.Ready, so that /readyz holds a hub back until it can let
// anyone in.
func (j *JWT) Ready() error {
	if j.remote == nil {
		return nil
	}
	return j.remote.ready()
}

// Close stops fetching a JWKS URL and waits for the fetching goroutine;
// ending NewJWT's ctx stops it too. Verify goes on with the keys held.
func (j *JWT) Close() {
	if j.remote != nil {
		j.remote.close()
	}
}

// readKey reads a fixed key or a key set from a file's bytes.
func (j *JWT) readKey(b []byte) error {
	trimmed := bytes.TrimSpace(b)
	switch {
	case bytes.HasPrefix(trimmed, []byte("{")):
		var doc struct {
			Keys []json.RawMessage `json:"keys"`
		}
		if err := json.Unmarshal(trimmed, &doc); err != nil || len(doc.Keys) == 0 {
			return errors.New(`key file looks like JSON but is no JWKS document ({"keys": [...]})`)
		}
		set, err := keyfunc.NewJWKSetJSON(trimmed)
		if err != nil {
			return err
		}
		j.set = set
	case bytes.HasPrefix(trimmed, []byte("-----BEGIN")):
		key, err := jwtkey.PEM(trimmed, false)
		if err != nil {
			return fmt.Errorf("key file: %w", err)
		}
		j.key = key
	default:
		if len(b) < 32 {
			return fmt.Errorf("an HMAC secret needs at least 32 bytes, the key file has %d", len(b))
		}
		j.key = b
	}
	return nil
}

var errAlgKey = errors.New("algorithm does not fit the key")

// ErrNoExp refuses a token without an "exp" claim, unless
// JWTOptions.AllowNoExp: such a token would never expire.
var ErrNoExp = errors.New("token has no exp (it would never expire)")

// keyFor returns the keyfunc of one verification: the key (or the keys of
// the set) that fit the token's algorithm.
func (j *JWT) keyFor(ctx context.Context) jwt.Keyfunc {
	return func(t *jwt.Token) (any, error) {
		alg := t.Method.Alg()
		if j.set == nil && j.remote == nil {
			if !slices.Contains(jwtkey.Algs(j.key), alg) {
				return nil, errAlgKey
			}
			return j.key, nil
		}
		lookup := func(set keyfunc.Keyfunc) (any, error) { return keyIn(ctx, set, t) }
		if j.remote != nil {
			return j.remote.key(ctx, lookup)
		}
		return lookup(j.set)
	}
}

// keyIn returns the key of set for t: the one its kid names, or without a
// kid every key of the set that fits its algorithm.
func keyIn(ctx context.Context, set keyfunc.Keyfunc, t *jwt.Token) (any, error) {
	alg := t.Method.Alg()
	k, err := set.KeyfuncCtx(ctx)(t)
	if err != nil {
		return nil, err
	}
	if ks, ok := k.(jwt.VerificationKeySet); ok { // no kid: every key of the set that fits
		var fit jwt.VerificationKeySet
		for _, k := range ks.Keys {
			if slices.Contains(jwtkey.Algs(k), alg) {
				fit.Keys = append(fit.Keys, k)
			}
		}
		if len(fit.Keys) == 0 {
			return nil, errAlgKey
		}
		return fit, nil
	}
	if !slices.Contains(jwtkey.Algs(k), alg) {
		return nil, errAlgKey
	}
	return k, nil
}

// Verify checks a token and returns what it says. The error says why a
// token is refused, never what it holds.
func (j *JWT) Verify(ctx context.Context, token string) (*rules.Token, error) {
	var claims jwt.MapClaims
	if _, err := j.parser.ParseWithClaims(token, &claims, j.keyFor(ctx)); err != nil {
		return nil, err
	}
	t := &rules.Token{Claims: claims}
	sub, err := claims.GetSubject()
	if err != nil || sub == "" {
		return nil, errors.New("token has no sub")
	}
	t.Subject = sub
	exp, err := claims.GetExpirationTime()
	if err != nil {
		return nil, err
	}
	switch {
	case exp != nil:
		if !time.Now().Before(exp.Time) { // exact: the leeway is for nbf
			return nil, jwt.ErrTokenExpired
		}
		t.Expires = exp.Time
	case !j.allowNoExp:
		return nil, ErrNoExp
	}
	if g, ok := claims["switchboard"]; ok {
		raw, err := json.Marshal(g)
		if err != nil {
			return nil, err
		}
		if t.Grants, err = rules.ParseGrants(raw); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// Authenticate is an Options.Authenticate that takes a request's
// [BearerToken] as a JWT. The identity is a *rules.Identity; a missing or
// refused token is ErrUnauthorized (401).
func (j *JWT) Authenticate(r *http.Request) (any, error) {
	tok := BearerToken(r)
	if tok == "" {
		return nil, fmt.Errorf("%w: no token", ErrUnauthorized)
	}
	t, err := j.Verify(r.Context(), tok)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnauthorized, err)
	}
	return rules.NewIdentity(t), nil
}
