package rules_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/hub/rules"
)

// walkThrough is the rule set of docs/security.md's deployment.
var walkThrough = []rules.Rule{
	{Allow: []string{"subscribe"}, To: []string{"user.{user}.>"}, Who: "authenticated"},
	{Allow: []string{"call"}, To: []string{"add"}, Who: "authenticated"},
	{Allow: []string{"publish", "address", "subscribe"}, To: []string{">"}, Who: "role=backend"},
	{Allow: []string{"subscribe"}, To: []string{"news.*"}, Who: "anyone"},
	{Allow: []string{"provide"}, To: []string{"billing.*"}, Who: "team=[billing]"},
}

func token(sub string, claims map[string]any, grants string) *rules.Identity {
	t := &rules.Token{Subject: sub, Claims: claims}
	if grants != "" {
		g, err := rules.ParseGrants(json.RawMessage(grants))
		if err != nil {
			panic(err)
		}
		t.Grants = g
	}
	return rules.NewIdentity(t)
}

func TestAllow(t *testing.T) {
	set, err := rules.Compile(walkThrough)
	if err != nil {
		t.Fatal(err)
	}
	alice := token("alice", map[string]any{"sub": "alice"}, "")
	backend := token("orders", map[string]any{"role": "backend"}, "")
	roles := token("carol", map[string]any{"role": []any{"support", "backend"}}, "")
	granted := token("dave", nil, `{"subscribe": ["user.dave.>"], "publish": ["chat.room1"], "address": ["user.support.*"]}`)
	noCall := token("erin", nil, `{"call": []}`)
	someCall := token("frank", nil, `{"call": ["billing.*"]}`)
	tests := []struct {
		name     string
		identity any
		action   hub.Action
		target   string
		want     bool
	}{
		{"own inbox", alice, hub.Subscribe, "user.alice.inbox", true},
		{"own inbox, wildcard below", alice, hub.Subscribe, "user.alice.>", true},
		{"own inbox, one word wildcard", alice, hub.Subscribe, "user.alice.*", true},
		{"own history", alice, hub.Subscribe, "user.alice.inbox", true},
		{"own presence", alice, hub.Presence, "user.alice.inbox", true},
		{"other's inbox", alice, hub.Subscribe, "user.bob.inbox", false},
		{"everyone's inbox", alice, hub.Subscribe, "user.*.inbox", false},
		{"everything", alice, hub.Subscribe, ">", false},
		{"the user word alone", alice, hub.Subscribe, "user.alice", false},
		{"static token's own inbox", "token-3", hub.Subscribe, "user.token-3.x", true},
		{"stringer's own inbox", stringer("bob"), hub.Subscribe, "user.bob.x", true},
		{"anonymous inbox", nil, hub.Subscribe, "user..x", false},
		{"anonymous news", nil, hub.Subscribe, "news.today", true},
		{"anonymous news, deeper", nil, hub.Subscribe, "news.today.sport", false},
		{"anonymous add", nil, hub.Call, "add", false},
		{"authenticated add", alice, hub.Call, "add", true},
		{"authenticated other method", alice, hub.Call, "sum", false},
		{"anonymous ping", nil, hub.Call, "rpc.ping", true},
		{"anonymous discover", nil, hub.Call, "rpc.discover", true},
		{"anonymous auth", nil, hub.Call, "rpc.auth", true},
		{"user publish", alice, hub.Publish, "user.alice.inbox", false},
		{"backend publish", backend, hub.Publish, "user.alice.inbox", true},
		{"backend address user", backend, hub.Address, "user.alice", true},
		{"backend address peer", backend, hub.Address, "peer.1234", true},
		{"backend provide", backend, hub.Provide, "billing.charge", false},
		{"claim in a list", roles, hub.Publish, "orders.new", true},
		{"claim as string refuses list rule", backend, hub.Provide, "billing.charge", false},
		{"static token has no claims", "token-1", hub.Publish, "orders.new", false},
		{"user address", alice, hub.Address, "user.alice", false},
		{"grants subscribe", granted, hub.Subscribe, "user.dave.inbox", true},
		{"grants ignore rules", granted, hub.Subscribe, "news.today", false},
		{"grants presence", granted, hub.Presence, "user.dave.x", true},
		{"grants publish", granted, hub.Publish, "chat.room1", true},
		{"grants publish elsewhere", granted, hub.Publish, "chat.room2", false},
		{"grants no provide", granted, hub.Provide, "x", false},
		{"grants call absent: all", granted, hub.Call, "anything", true},
		{"grants address", granted, hub.Address, "user.support.1", true},
		{"grants address other", granted, hub.Address, "user.alice", false},
		{"grants empty call", noCall, hub.Call, "add", false},
		{"grants empty call, system", noCall, hub.Call, "rpc.whoami", true},
		{"grants some call", someCall, hub.Call, "billing.charge", true},
		{"grants some call, other", someCall, hub.Call, "add", false},
		{"unknown action", alice, hub.Action(99), "x", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := set.Allow(tt.identity, tt.action, tt.target); got != tt.want {
				t.Errorf("Allow(%v, %v, %q) = %v, want %v", tt.identity, tt.action, tt.target, got, tt.want)
			}
			ctx := hub.WithIdentity(context.Background(), tt.identity)
			if err := set.Policy(ctx, tt.action, tt.target); (err == nil) != tt.want {
				t.Errorf("Policy = %v, want allowed %v", err, tt.want)
			}
		})
	}
}

type stringer string

func (s stringer) String() string { return string(s) }

func TestReplace(t *testing.T) {
	set, err := rules.Compile(walkThrough)
	if err != nil {
		t.Fatal(err)
	}
	id := token("alice", nil, "")
	if set.Allow(id, hub.Publish, "chat.room1") {
		t.Fatal("allowed before the grants")
	}
	g, _ := rules.ParseGrants(json.RawMessage(`{"publish": ["chat.*"]}`))
	if err := id.Replace(&rules.Token{Subject: "alice", Grants: g}); err != nil {
		t.Fatal(err)
	}
	if !set.Allow(id, hub.Publish, "chat.room1") {
		t.Error("the new token's grants do not hold")
	}
	if err := id.Replace(&rules.Token{Subject: "mallory"}); !errors.Is(err, rules.ErrOtherSubject) {
		t.Errorf("Replace with another subject = %v, want ErrOtherSubject", err)
	}
	if id.String() != "alice" || !set.Allow(id, hub.Publish, "chat.room1") {
		t.Error("a refused replacement changed the identity")
	}
}

func TestDemo(t *testing.T) {
	set := rules.Demo()
	for _, a := range []hub.Action{hub.Subscribe, hub.Publish, hub.Provide, hub.Call, hub.Presence, hub.Address} {
		if !set.Allow(nil, a, "any.thing") || !set.Allow(nil, a, ">") {
			t.Errorf("demo refuses %v", a)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name string
		rule rules.Rule
		want string
	}{
		{"no who", rules.Rule{Allow: []string{"publish"}, To: []string{"a"}}, "who is missing"},
		{"bad who", rules.Rule{Allow: []string{"publish"}, To: []string{"a"}, Who: "everybody"}, `who "everybody"`},
		{"unknown action", rules.Rule{Allow: []string{"pubish"}, To: []string{"a"}, Who: "anyone"}, `unknown action "pubish"`},
		{"no action", rules.Rule{To: []string{"a"}, Who: "anyone"}, "no action"},
		{"no pattern", rules.Rule{Allow: []string{"publish"}, Who: "anyone"}, "no pattern"},
		{"empty word", rules.Rule{Allow: []string{"publish"}, To: []string{"a..b"}, Who: "anyone"}, "empty word"},
		{"> not last", rules.Rule{Allow: []string{"publish"}, To: []string{">.a"}, Who: "anyone"}, "last word"},
		{"other placeholder", rules.Rule{Allow: []string{"publish"}, To: []string{"user.{id}"}, Who: "anyone"}, "placeholder"},
		{"partial wildcard", rules.Rule{Allow: []string{"publish"}, To: []string{"a*"}, Who: "anyone"}, "whole word"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := rules.Compile([]rules.Rule{{Allow: []string{"call"}, To: []string{"x"}, Who: "anyone"}, tt.rule})
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "rule 2: ") {
				t.Errorf("Compile = %v, want rule 2 and %q", err, tt.want)
			}
		})
	}
}

func TestParseGrants(t *testing.T) {
	for _, bad := range []string{`[]`, `{"publish": "a"}`, `{"subscribe": ["a..b"]}`, `{"address": ["user.{user}"]}`} {
		if _, err := rules.ParseGrants(json.RawMessage(bad)); err == nil {
			t.Errorf("ParseGrants(%s) accepted", bad)
		}
	}
}

// TestAllowAllocates nothing on the paths a publish or a call takes.
func TestAllowAllocates(t *testing.T) {
	set, err := rules.Compile(walkThrough)
	if err != nil {
		t.Fatal(err)
	}
	alice := token("alice", nil, "")
	backend := token("orders", map[string]any{"role": "backend"}, "")
	granted := token("dave", nil, `{"publish": ["chat.room1"]}`)
	email := token("john.doe@example.com", nil, "")
	n := testing.AllocsPerRun(100, func() {
		set.Allow(alice, hub.Subscribe, "user.alice.inbox")
		set.Allow(email, hub.Subscribe, "user.john:2edoe:40example:2ecom.inbox")
		set.Allow(backend, hub.Publish, "user.alice.inbox")
		set.Allow(granted, hub.Publish, "chat.room1")
		set.Allow(alice, hub.Call, "add")
		set.Allow("token-1", hub.Call, "add")
		set.Allow(nil, hub.Subscribe, "news.today")
	})
	if n != 0 {
		t.Errorf("Allow allocates %v times per run", n)
	}
}
