package rules

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/switchboard-rpc/switchboard/hub"
)

// Rule is one entry of a rule set, as a config file writes it.
type Rule struct {
	// Allow lists the actions: subscribe (with rpc.history and
	// rpc.presence), publish, provide, call, address, and admin (the
	// admin API's methods, such as admin.peers: see AllowAdmin).
	Allow []string `json:"allow" yaml:"allow"`
	// To lists the patterns the actions may be done on: topics for
	// subscribe and publish, methods for provide and call, rpc.call
	// addresses ("user.<identity>", "topic.<topic>", "peer.<id>") for
	// address, admin methods ("admin.*") for admin.
	To []string `json:"to" yaml:"to"`
	// Who is "anyone", "authenticated", or "claim=value", where claim
	// may be a dotted path into nested claims ("realm_access.roles").
	Who string `json:"who" yaml:"who"`
}

type action int

const (
	actSubscribe action = iota
	actPublish
	actProvide
	actCall
	actAddress
	actAdmin
	numActions
)

var actionNames = [numActions]string{"subscribe", "publish", "provide", "call", "address", "admin"}

// Set is a compiled rule set. Its methods are safe for concurrent use.
type Set struct {
	by [numActions][]compiled
}

// compiled is one pattern of a rule, for one action.
type compiled struct {
	pattern     string
	who         whoKind
	claim, want string
}

type whoKind int

const (
	whoAnyone whoKind = iota
	whoAuthenticated
	whoClaim
)

// Compile checks rules and returns the set they make. An error names the
// rule (counted from 1) and what is wrong with it.
func Compile(rules []Rule) (*Set, error) {
	s := new(Set)
	for i, r := range rules {
		if err := s.add(r); err != nil {
			return nil, fmt.Errorf("rule %d: %w", i+1, err)
		}
	}
	return s, nil
}

func (s *Set) add(r Rule) error {
	c := compiled{}
	switch who := strings.TrimSpace(r.Who); who {
	case "anyone":
		c.who = whoAnyone
	case "authenticated":
		c.who = whoAuthenticated
	case "":
		return errors.New(`who is missing: "anyone", "authenticated" or "claim=value"`)
	default:
		name, want, ok := strings.Cut(who, "=")
		if !ok || strings.TrimSpace(name) == "" {
			return fmt.Errorf(`who %q: want "anyone", "authenticated" or "claim=value"`, who)
		}
		c.who, c.claim, c.want = whoClaim, strings.TrimSpace(name), strings.TrimSpace(want)
	}
	if len(r.Allow) == 0 {
		return errors.New("allow lists no action")
	}
	if len(r.To) == 0 {
		return errors.New("to lists no pattern")
	}
	for _, p := range r.To {
		if err := checkPattern(p, true); err != nil {
			return err
		}
	}
	for _, name := range r.Allow {
		a := action(-1)
		for i, n := range actionNames {
			if n == name {
				a = action(i)
			}
		}
		if a < 0 {
			return fmt.Errorf("unknown action %q: want one of %s", name, strings.Join(actionNames[:], ", "))
		}
		for _, p := range r.To {
			c.pattern = p
			s.by[a] = append(s.by[a], c)
		}
	}
	return nil
}

// Demo is the rule set of a demo hub: anyone may do anything but call
// the admin API.
func Demo() *Set {
	all := make([]string, 0, numActions)
	all = append(all, actionNames[:actAdmin]...) // never admin
	s, err := Compile([]Rule{{Allow: all, To: []string{">"}, Who: "anyone"}})
	if err != nil {
		panic(err)
	}
	return s
}

// Policy is the set as a [hub.Policy]: a peer whose token carries grants
// gets what they grant, any other what a rule allows.
func (s *Set) Policy(ctx context.Context, a hub.Action, target string) error {
	if s.Allow(hub.Identity(ctx), a, target) {
		return nil
	}
	return errRefused
}

// Authorize is the set as server.Options.Authorize: it decides the calls
// of the hub's own methods as the Policy decides calls of provided ones.
// The always-allowed system methods pass.
func (s *Set) Authorize(ctx context.Context, method string) error {
	return s.Policy(ctx, hub.Call, method)
}

var errRefused = errors.New("rules: not allowed")

// Allow reports whether a peer with identity (as authentication gave it:
// nil, a string, a fmt.Stringer, or an *Identity with a token) may do a
// on target.
func (s *Set) Allow(identity any, a hub.Action, target string) bool {
	act, ok := toAction(a)
	if !ok {
		return false
	}
	if act == actCall && alwaysAllowed(target) {
		return true
	}
	return s.allow(identity, act, target)
}

func (s *Set) allow(identity any, act action, target string) bool {
	var user string
	var tok *Token
	switch id := identity.(type) {
	case nil:
	case *Identity:
		tok = id.Token()
		user = tok.Subject
		if tok.Grants != nil {
			return tok.Grants.allow(act, target)
		}
	case string:
		user = id
	case fmt.Stringer:
		user = id.String()
	}
	for i := range s.by[act] {
		c := &s.by[act][i]
		switch c.who {
		case whoAuthenticated:
			if identity == nil {
				continue
			}
		case whoClaim:
			if tok == nil || !claimIs(claimAt(tok.Claims, c.claim), c.want) {
				continue
			}
		}
		if covers(c.pattern, target, user) {
			return true
		}
	}
	return false
}

func toAction(a hub.Action) (action, bool) {
	switch a {
	case hub.Subscribe, hub.Presence:
		return actSubscribe, true
	case hub.Publish:
		return actPublish, true
	case hub.Provide:
		return actProvide, true
	case hub.Call:
		return actCall, true
	case hub.Address:
		return actAddress, true
	}
	return 0, false
}

// alwaysAllowed reports whether method is one of the built-in methods
// every peer may call: those the hub's table ([hub.Builtins]) says no
// Policy is asked about.
func alwaysAllowed(method string) bool {
	if !strings.HasPrefix(method, "rpc.") {
		return false
	}
	b, ok := hub.BuiltinMethod(method)
	return ok && b.Open()
}

// claimAt returns the claim that path names: a claim of that name, else,
// for a path "a.b.c", claim "a"'s member "b.c" (nested objects, as
// Keycloak's "realm_access": {"roles": [...]}), a name holding dots
// (Auth0's "https://example.com/roles") first. Nil when there is none.
func claimAt(claims map[string]any, path string) any {
	if v, ok := claims[path]; ok {
		return v
	}
	for i := 0; i < len(path); i++ {
		if path[i] != '.' {
			continue
		}
		if m, ok := claims[path[:i]].(map[string]any); ok {
			if v := claimAt(m, path[i+1:]); v != nil {
				return v
			}
		}
	}
	return nil
}

// claimIs reports whether a claim's value is want, or is a list holding it.
func claimIs(v any, want string) bool {
	if l, ok := v.([]any); ok {
		for _, e := range l {
			if scalarIs(e, want) {
				return true
			}
		}
		return false
	}
	return scalarIs(v, want)
}

// scalarIs reports whether a string, boolean or number claim is want.
func scalarIs(v any, want string) bool {
	switch v := v.(type) {
	case string:
		return v == want
	case bool:
		return (want == "true" && v) || (want == "false" && !v)
	case float64:
		f, err := strconv.ParseFloat(want, 64)
		return err == nil && f == v
	case json.Number:
		return v.String() == want
	}
	return false
}
