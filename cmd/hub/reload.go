package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/hub/rules"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// On SIGHUP the hub reads its configuration again, as at start (the same
// command line, the environment, the config file), and replaces what it
// can while it runs: the rules, the token file, the JWT key, JWKS URL,
// audience and issuer, -anonymous, -allow-provide, the TLS certificate and
// -log-level.
// Connections, subscriptions and history stay, but for what the new
// rules refuse: the subscriptions and provided methods of connected peers
// that they no longer allow end, and each peer concerned is told with
// rpc.revoked (revoke.go). A configuration that does
// not load (a broken file, a missing key, a certificate that does not
// parse) is refused with a log line, and the running one stays. Settings
// that only a restart can change (the address, NATS, limits, ...) keep
// their running values, and the log names them; turning authentication,
// JSON Web Tokens or TLS on or off also needs a restart, and a reload that
// tries is refused.

// reloadableFlags are the flags a reload applies.
var reloadableFlags = []string{"config", "token-file", "jwt-key", "jwks", "jwt-audience", "jwt-issuer",
	"anonymous", "allow-provide", "tls-cert", "tls-key", "log-level"}

// state is what a reload replaces: built from a config at start and on
// each SIGHUP.
type state struct {
	policy hub.Policy       // grants first, then the rules, the demo or the defaults
	admin  *rules.Set       // who may call the admin API on -addr: grants, then the rules (never the demo)
	access *access          // authentication
	cert   *tls.Certificate // nil without TLS
	stop   context.CancelFunc
}

// newState builds the state of c. demo is the running hub's -demo, which
// a reload does not change (the demo's methods are registered at start).
// ctx bounds the JWKS refresh of the state's JWT verifier, until stop.
func newState(ctx context.Context, c *config, demo bool, log *zap.Logger) (*state, error) {
	var base hub.Policy
	if demo {
		base = rules.Demo().Policy
	}
	set, err := c.identity.ruleSet()
	if err != nil {
		return nil, err
	}
	admin := set
	if set != nil { // the config file's rules, in demo mode too
		base = set.Policy
	} else if admin, err = rules.Compile(nil); err != nil { // only tokens' grants
		return nil, err
	}
	if base == nil && c.routes.allowProvide {
		base = allowProvide
	}
	cert, err := c.listen.loadCert()
	if err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(ctx)
	acc, err := c.identity.authenticate(ctx, c.tokenFile, log)
	if err != nil {
		stop()
		return nil, err
	}
	// A token's grants hold whatever decides for the others: the rules,
	// the demo's "anyone may do anything", or the default policy.
	return &state{policy: grantsFirst(base), admin: admin, access: acc, cert: cert, stop: stop}, nil
}

// live holds the running state, replaced whole by a reload. Its methods
// are what the server and the hub are given: they ask the state of the
// moment. It is safe for concurrent use.
type live struct {
	cur   atomic.Pointer[state]
	demo  bool
	args  []string        // the command line, read again on reload
	level zap.AtomicLevel // the logger's

	mu   sync.Mutex // serializes reloads
	conf *config    // the configuration cur was built from

	// hub, once set, has its peers reauthorized after each reload, so
	// that narrowed rules end what they no longer allow.
	hub *hub.Hub

	reloaded func() // called after each reload (the MCP tool lists); set before watch
}

func newLive(ctx context.Context, c *config, args []string, level zap.AtomicLevel, log *zap.Logger) (*live, error) {
	st, err := newState(ctx, c, c.demo, log)
	if err != nil {
		return nil, err
	}
	lv := &live{demo: c.demo, args: args, level: level, conf: c}
	lv.cur.Store(st)
	return lv, nil
}

func (lv *live) policy(ctx context.Context, a hub.Action, target string) error {
	return lv.cur.Load().policy(ctx, a, target)
}

func (lv *live) authorize(ctx context.Context, method string) error {
	return lv.policy(ctx, hub.Call, method)
}

func (lv *live) authorizeAdmin(ctx context.Context, method string) error {
	return lv.cur.Load().admin.AuthorizeAdmin(ctx, method)
}

func (lv *live) authenticate(r *http.Request) (any, error) {
	return lv.cur.Load().access.authenticate(r)
}

func (lv *live) reauthenticate(ctx context.Context, token string) (*rules.Token, error) {
	return lv.cur.Load().access.reauthenticate(ctx, token)
}

func (lv *live) operator(r *http.Request) (any, error) {
	return lv.cur.Load().access.operator(r)
}

func (lv *live) certificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return lv.cur.Load().cert, nil
}

// serverAuth returns what the server's Options and Guard take: nil where
// the running configuration has nothing, which a reload cannot change.
func (lv *live) serverAuth() (authenticate func(*http.Request) (any, error), reauthenticate func(context.Context, string) (*rules.Token, error), operator func(*http.Request) (any, error)) {
	acc := lv.cur.Load().access
	if acc.authenticate != nil {
		authenticate = lv.authenticate
	}
	if acc.reauthenticate != nil {
		reauthenticate = lv.reauthenticate
	}
	if acc.operator != nil {
		operator = lv.operator
	}
	return authenticate, reauthenticate, operator
}

// ready returns an Options.Ready that is also not ready while the running
// JWT verifier has no keys (a JWKS URL not fetched yet): a hub that would
// refuse every token takes no traffic. other, if set, is asked first.
func (lv *live) ready(other func() error) func() error {
	return func() error {
		if other != nil {
			if err := other(); err != nil {
				return err
			}
		}
		if j := lv.cur.Load().access.jwt; j != nil {
			return j.Ready()
		}
		return nil
	}
}

// close stops the running state's JWKS refresh.
func (lv *live) close() { lv.cur.Load().stop() }

// watch reloads on each signal of hup (SIGHUP) until ctx ends.
func (lv *live) watch(ctx context.Context, hup <-chan os.Signal, log *zap.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			if err := lv.reload(ctx, log); err != nil {
				log.Error("reload refused: the running configuration stays", zap.Error(err))
			}
		}
	}
}

// reload reads the configuration again and replaces the state with the
// one it makes, or returns why not.
func (lv *live) reload(ctx context.Context, log *zap.Logger) error {
	lv.mu.Lock()
	defer lv.mu.Unlock()
	c, err := parseFlags(lv.args, io.Discard) // the error says what is wrong; no usage text
	if err != nil {
		return err
	}
	if err := c.validate(); err != nil {
		return err
	}
	level, err := zapcore.ParseLevel(c.logLevel)
	if err != nil {
		return fmt.Errorf("-log-level: %w", err)
	}
	old := lv.cur.Load()
	st, err := newState(ctx, c, lv.demo, log)
	if err != nil {
		return err
	}
	for _, on := range []struct {
		what     string
		was, now bool
	}{
		{"turning authentication on or off", old.access.authenticate != nil, st.access.authenticate != nil},
		{"turning JSON Web Tokens on or off", old.access.reauthenticate != nil, st.access.reauthenticate != nil},
		{"turning TLS on or off", old.cert != nil, st.cert != nil},
	} {
		if on.was != on.now {
			st.stop()
			return fmt.Errorf("%s needs a restart", on.what)
		}
	}
	lv.cur.Store(st)
	old.stop()
	if lv.reloaded != nil {
		lv.reloaded()
	}
	lv.level.SetLevel(level)
	restart := changedFlags(lv.conf.flags, c.flags)
	lv.conf = c
	log.Info("configuration reloaded", zap.Bool("rules", c.identity.file.hasRules), zap.Bool("jwt", c.identity.usesJWT()),
		zap.Bool("tls", st.cert != nil))
	if len(restart) > 0 {
		log.Warn("reload: these settings need a restart and keep their running values", zap.Strings("settings", restart))
	}
	if lv.hub != nil {
		reauthorizeAll(ctx, lv.hub, log)
	}
	return nil
}

// changedFlags lists the flags whose values differ between two parsed
// flag sets, but for those a reload applies.
func changedFlags(was, now *flag.FlagSet) []string {
	var out []string
	was.VisitAll(func(f *flag.Flag) {
		if slices.Contains(reloadableFlags, f.Name) {
			return
		}
		if g := now.Lookup(f.Name); g != nil && g.Value.String() != f.Value.String() {
			out = append(out, f.Name)
		}
	})
	return out
}
