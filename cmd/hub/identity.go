package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/switchboard-rpc/switchboard/hub"
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

// grantsFirst returns the policy that gives a peer whose token carries
// grants (the "switchboard" claim) what they grant, and any other what p
// allows (nil: hub.DefaultPolicy). A rule set decides so itself; the demo
// and the default policy know nothing of tokens, so without this a token
// granted only "add" would call every method of the demo.
func grantsFirst(p hub.Policy) hub.Policy {
	if p == nil {
		p = hub.DefaultPolicy
	}
	grants, err := rules.Compile(nil) // no rules: only grants allow anything
	if err != nil {
		panic(err)
	}
	return func(ctx context.Context, a hub.Action, target string) error {
		if id, ok := hub.Identity(ctx).(*rules.Identity); ok && id.Token().Grants != nil {
			return grants.Policy(ctx, a, target)
		}
		return p(ctx, a, target)
	}
}

func (f *identityFlags) usesJWT() bool { return f.jwtKey != "" || f.jwks != "" }

// access is how the hub tells who sent a request.
type access struct {
	// authenticate is the server's Authenticate: a token of the token
	// file, else a JSON Web Token; nil when neither is set.
	authenticate func(*http.Request) (any, error)
	// reauthenticate verifies the JWTs of rpc.auth; nil without JWTs.
	reauthenticate func(context.Context, string) (*rules.Token, error)
	// operator guards the operator's paths on -addr (/metrics): only a
	// token of the token file opens them, never a JWT, which a login
	// system issues to any user. With JWTs and no token file nothing
	// opens them; with no authentication at all, nil: they are open, as
	// the whole hub is.
	operator func(*http.Request) (any, error)
	// jwt is the JWT verifier, nil without JWTs: /readyz asks it whether
	// it holds keys.
	jwt *server.JWT
}

// authenticate returns how the hub tells who a request is from: a request
// with a token from the file is that token's; any other must carry a JWT.
func (f *identityFlags) authenticate(ctx context.Context, tokenFile string, log *zap.Logger) (*access, error) {
	var static func(*http.Request) (any, error)
	if tokenFile != "" {
		tokens, err := readTokens(tokenFile)
		if err != nil {
			return nil, err
		}
		static = server.TokenAuth(tokens)
	}
	if !f.usesJWT() {
		return &access{authenticate: f.orAnonymous(static), operator: static}, nil
	}
	j, err := f.verifier(ctx, log)
	if err != nil {
		return nil, err
	}
	if static == nil {
		return &access{authenticate: f.orAnonymous(j.Authenticate), reauthenticate: j.Verify, operator: noOperator, jwt: j}, nil
	}
	both := func(r *http.Request) (any, error) {
		if id, err := static(r); err == nil {
			return id, nil
		}
		return j.Authenticate(r)
	}
	return &access{authenticate: f.orAnonymous(both), reauthenticate: j.Verify, operator: static, jwt: j}, nil
}

// noOperator refuses every request to the operator's paths: a hub with
// JSON Web Tokens and no token file has no operator's token to accept.
func noOperator(r *http.Request) (any, error) {
	if server.BearerToken(r) == "" {
		return nil, fmt.Errorf("%w: no token", server.ErrUnauthorized)
	}
	return nil, fmt.Errorf("%w: only a token of -token-file opens this path, and none is set (serve /metrics on -metrics-addr instead)", server.ErrForbidden)
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
// hub would, runs the checks the hub runs at start (config.validate: the
// log settings, the addresses, the files the flags name, the rules), and
// prints the effective configuration with secrets redacted.
func checkConfig(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "" || args[0][0] == '-' {
		fmt.Fprintln(stderr, "usage: hub check-config FILE [flags]")
		return errors.New("check-config needs a file")
	}
	c, err := parseFlags(append([]string{"-config", args[0]}, args[1:]...), stderr)
	if err != nil {
		return err
	}
	for _, v := range c.identity.file.ignored {
		fmt.Fprintf(stderr, "hub: warning: %s ignored: %s\n", v.name, v.reason)
	}
	if err := c.validate(); err != nil {
		return err
	}
	if msg := c.routes.ignored(c.identity.file.hasRules); msg != "" {
		fmt.Fprintln(stderr, "warning:", msg)
	}
	return printConfig(stdout, c.flags, c.identity.file)
}
