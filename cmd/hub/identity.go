package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"

	"github.com/switchboard-rpc/switchboard/hub/rules"
	"github.com/switchboard-rpc/switchboard/server"
	"go.uber.org/zap"
)

// identityFlags are the flags of who a peer is and what it may do: the
// config file, JSON Web Tokens, and the rules the config file holds.
type identityFlags struct {
	config           string
	jwtKey, jwks     string
	audience, issuer string
	anonymous        bool
	allowNoExp       bool
	file             *fileConfig // what the config file says beyond the flags

	jwt *server.JWT // the verifier authenticate made, if any
}

func (f *identityFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.config, "config", "", "read settings from this YAML or JSON `file`: each flag is a key of the same name, plus \"rules\"; SWITCHBOARD_<NAME> environment variables override it, flags override both")
	fs.StringVar(&f.jwtKey, "jwt-key", "", "accept JSON Web Tokens signed with the key in this `file`: an HMAC secret's raw bytes, a PEM public key (RSA, EC, Ed25519) or a JWKS document")
	fs.StringVar(&f.jwks, "jwks", "", "accept JSON Web Tokens signed with a key of the JWKS document at this `URL` (fetched, refreshed, and fetched again for an unknown kid)")
	fs.StringVar(&f.audience, "jwt-audience", "", "require this `aud` claim of JSON Web Tokens")
	fs.StringVar(&f.issuer, "jwt-issuer", "", "require this `iss` claim of JSON Web Tokens")
	fs.BoolVar(&f.allowNoExp, "jwt-allow-no-exp", false, "accept JSON Web Tokens without an exp claim, which then never expire (default: refused)")
	fs.BoolVar(&f.anonymous, "anonymous", false, "with -token-file or -jwt-key/-jwks, let a request without any token in, as an anonymous peer: it may do what the rules allow \"anyone\" (a wrong token is still refused)")
}

// load applies the environment and the config file to the flags not given
// on the command line.
func (f *identityFlags) load(fs *flag.FlagSet) error {
	fc, err := applyConfig(fs)
	if err != nil {
		return err
	}
	f.file = fc
	return nil
}

// ruleSet returns the rules of the config file, nil when it has none.
func (f *identityFlags) ruleSet() (*rules.Set, error) {
	if f.file == nil || !f.file.hasRules {
		return nil, nil
	}
	return rules.Compile(f.file.rules)
}

func (f *identityFlags) usesJWT() bool { return f.jwtKey != "" || f.jwks != "" }

// authenticate returns the server's Authenticate and Reauthenticate for a
// token file and JSON Web Tokens, nil when neither is set. A request with
// a token from the file is that token's; any other must carry a JWT.
func (f *identityFlags) authenticate(ctx context.Context, tokenFile string, log *zap.Logger) (
	func(*http.Request) (any, error), func(context.Context, string) (*rules.Token, error), error,
) {
	var static func(*http.Request) (any, error)
	if tokenFile != "" {
		tokens, err := readTokens(tokenFile)
		if err != nil {
			return nil, nil, err
		}
		static = server.TokenAuth(tokens)
	}
	if !f.usesJWT() {
		return f.orAnonymous(static), nil, nil
	}
	j, err := f.verifier(ctx, log)
	if err != nil {
		return nil, nil, err
	}
	f.jwt = j
	if static == nil {
		return f.orAnonymous(j.Authenticate), j.Verify, nil
	}
	both := func(r *http.Request) (any, error) {
		if id, err := static(r); err == nil {
			return id, nil
		}
		return j.Authenticate(r)
	}
	return f.orAnonymous(both), j.Verify, nil
}

// orAnonymous lets requests without a token past auth, with -anonymous.
func (f *identityFlags) orAnonymous(auth func(*http.Request) (any, error)) func(*http.Request) (any, error) {
	if auth == nil || !f.anonymous {
		return auth
	}
	return func(r *http.Request) (any, error) {
		if server.BearerToken(r) == "" {
			return nil, nil
		}
		return auth(r)
	}
}

// ready returns an Options.Ready that is also not ready while the JWT
// verifier has no keys (a JWKS URL not fetched yet): a hub that would
// refuse every token takes no traffic. other, if set, is asked first.
func (f *identityFlags) ready(other func() error) func() error {
	if f.jwt == nil {
		return other
	}
	return func() error {
		if other != nil {
			if err := other(); err != nil {
				return err
			}
		}
		return f.jwt.Ready()
	}
}

func (f *identityFlags) verifier(ctx context.Context, log *zap.Logger) (*server.JWT, error) {
	o := &server.JWTOptions{JWKSURL: f.jwks, Audience: f.audience, Issuer: f.issuer, AllowNoExp: f.allowNoExp, Logger: log}
	if f.jwtKey != "" {
		key, err := os.ReadFile(f.jwtKey)
		if err != nil {
			return nil, err
		}
		o.Key = key
	}
	return server.NewJWT(ctx, o)
}

// checkConfig is "hub check-config FILE [flags]": it loads the file as the
// hub would, checks what can be checked without listening (the token
// file, the JWT key, the rules, the log settings), and prints the
// effective configuration with secrets redacted.
func checkConfig(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "" || args[0][0] == '-' {
		fmt.Fprintln(stderr, "usage: hub check-config FILE [flags]")
		return errors.New("check-config needs a file")
	}
	c, err := parseFlags(append([]string{"-config", args[0]}, args[1:]...), stderr)
	if err != nil {
		return err
	}
	if _, err := newLogger(c.logLevel, c.logFormat, io.Discard); err != nil {
		return err
	}
	if c.tokenFile != "" {
		if _, err := readTokens(c.tokenFile); err != nil {
			return err
		}
	}
	if c.identity.jwtKey != "" {
		if _, err := c.identity.verifier(context.Background(), zap.NewNop()); err != nil {
			return err
		}
	}
	if c.identity.jwks != "" {
		if u, err := url.Parse(c.identity.jwks); err != nil || (u.Scheme != "https" && u.Scheme != "http") {
			return fmt.Errorf("-jwks %q is no http(s) URL", c.identity.jwks)
		}
	}
	if _, err := c.identity.ruleSet(); err != nil {
		return err
	}
	if msg := c.routes.ignored(c.identity.file.hasRules); msg != "" {
		fmt.Fprintln(stderr, "warning:", msg)
	}
	return printConfig(stdout, c.flags, c.identity.file)
}
