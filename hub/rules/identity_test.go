package rules_test

import (
	"testing"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/hub/rules"
)

// TestUserIsAName checks that {user} stands for the peer's identity only,
// escaped into one word (hub.UserWord): an identity holding "*", ">" or
// dots widens nothing, and every identity has topics of its own.
func TestUserIsAName(t *testing.T) {
	set, err := rules.Compile([]rules.Rule{
		{Allow: []string{"subscribe", "publish"}, To: []string{"user.{user}.>"}, Who: "authenticated"},
	})
	if err != nil {
		t.Fatal(err)
	}
	star := token("*", nil, "")
	gt := token(">", nil, "")
	a := token("a", nil, "")
	ab := token("a.b", nil, "")
	email := token("john.doe@example.com", nil, "")
	auth0 := token("auth0|abc", nil, "")
	empty := token("", nil, "")
	tests := []struct {
		name     string
		identity any
		target   string
		want     bool
	}{
		{"star reads everyone's", star, "user.*.>", false},
		{"star reads alice's", star, "user.*.inbox", false},
		{"star reads its own", star, "user.:2a.inbox", true},
		{"gt reads everything", gt, "user.>", false},
		{"gt reads its own", gt, "user.:3e.inbox", true},
		{"a reads a.b's", a, "user.a.b.inbox", true}, // a's topic "user.a.b.inbox", not a.b's
		{"a.b reads its own", ab, "user.a:2eb.inbox", true},
		{"a reads a.b's word", a, "user.a:2eb.inbox", false},
		{"a.b's topics are not a's", ab, "user.a.b.inbox", false},
		{"email has its own", email, "user.john:2edoe:40example:2ecom.inbox", true},
		{"email, unescaped", email, "user.john.doe@example.com.inbox", false},
		{"auth0 has its own", auth0, "user.auth0:7cabc.>", true},
		{"static token", "key:1", "user.key:3a1.x", true},
		{"static token unescaped", "key:1", "user.key:1.x", false},
		{"empty identity", empty, "user..x", false},
		{"empty identity, any word", empty, "user.x.y", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, act := range []hub.Action{hub.Subscribe, hub.Publish} {
				if got := set.Allow(tt.identity, act, tt.target); got != tt.want {
					t.Errorf("Allow(%v, %v, %q) = %v, want %v", tt.identity, act, tt.target, got, tt.want)
				}
			}
		})
	}
	// The word is the one hub.UserWord gives, which servers and clients
	// use to build a user's topics.
	for _, id := range []string{"*", "a.b", "john.doe@example.com", "auth0|abc", "zoë"} {
		if target := "user." + hub.UserWord(id) + ".inbox"; !set.Allow(token(id, nil, ""), hub.Subscribe, target) {
			t.Errorf("%q may not subscribe to %q", id, target)
		}
	}
}

// TestNestedClaims checks "claim.path=value" in who: a dotted path into
// nested claim objects, an array matching when it holds the value.
func TestNestedClaims(t *testing.T) {
	set, err := rules.Compile([]rules.Rule{
		{Allow: []string{"publish"}, To: []string{"admin.>"}, Who: "realm_access.roles=admin"},
		{Allow: []string{"publish"}, To: []string{"billing.>"}, Who: "resource_access.billing.roles=editor"},
		{Allow: []string{"publish"}, To: []string{"ns.>"}, Who: "https://example.com/roles=ops"},
		{Allow: []string{"publish"}, To: []string{"level.>"}, Who: "level=3"},
	})
	if err != nil {
		t.Fatal(err)
	}
	keycloak := token("kc", map[string]any{
		"realm_access":    map[string]any{"roles": []any{"user", "admin"}},
		"resource_access": map[string]any{"billing": map[string]any{"roles": []any{"editor"}}},
	}, "")
	user := token("u", map[string]any{"realm_access": map[string]any{"roles": []any{"user"}}}, "")
	flat := token("f", map[string]any{"realm_access.roles": "admin"}, "")
	stringRole := token("s", map[string]any{"realm_access": map[string]any{"roles": "admin"}}, "")
	auth0 := token("a", map[string]any{"https://example.com/roles": []any{"ops"}}, "")
	level := token("l", map[string]any{"level": float64(3)}, "")
	notObject := token("n", map[string]any{"realm_access": "admin"}, "")
	tests := []struct {
		name     string
		identity any
		target   string
		want     bool
	}{
		{"nested array holds it", keycloak, "admin.x", true},
		{"nested array does not", user, "admin.x", false},
		{"deeper", keycloak, "billing.x", true},
		{"deeper, other", user, "billing.x", false},
		{"a claim named with dots", flat, "admin.x", true},
		{"nested string", stringRole, "admin.x", true},
		{"namespaced claim", auth0, "ns.x", true},
		{"number", level, "level.x", true},
		{"not an object", notObject, "admin.x", false},
		{"no claims", "static", "admin.x", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := set.Allow(tt.identity, hub.Publish, tt.target); got != tt.want {
				t.Errorf("Allow(%v, %q) = %v, want %v", tt.identity, tt.target, got, tt.want)
			}
		})
	}
}
