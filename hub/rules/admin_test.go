package rules_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/hub/rules"
)

func TestAdminAction(t *testing.T) {
	set, err := rules.Compile([]rules.Rule{
		{Allow: []string{"subscribe", "publish", "provide", "call", "address"}, To: []string{">"}, Who: "anyone"},
		{Allow: []string{"admin"}, To: []string{"admin.peers", "admin.info"}, Who: "role=support"},
		{Allow: []string{"admin"}, To: []string{"admin.*"}, Who: "role=ops"},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		identity any
		method   string
		want     bool
	}{
		{"anonymous", nil, "admin.peers", false},
		{"a user allowed everything else", "alice", "admin.peers", false},
		{"support lists", token("sam", map[string]any{"role": "support"}, ""), "admin.peers", true},
		{"support does not kick", token("sam", map[string]any{"role": "support"}, ""), "admin.disconnect", false},
		{"ops kicks", token("olga", map[string]any{"role": "ops"}, ""), "admin.disconnect", true},
		{"granted in the token", token("svc", nil, `{"admin": ["admin.*"]}`), "admin.broadcast", true},
		{"grants without admin", token("svc", map[string]any{"role": "ops"}, `{"subscribe": [">"]}`), "admin.peers", false},
	}
	for _, tt := range tests {
		if got := set.AllowAdmin(tt.identity, tt.method); got != tt.want {
			t.Errorf("%s: AllowAdmin(%s) = %v, want %v", tt.name, tt.method, got, tt.want)
		}
	}
	// No hub.Action is the admin one: the Policy never grants it.
	ctx := hub.WithIdentity(context.Background(), token("olga", map[string]any{"role": "ops"}, ""))
	if err := set.AuthorizeAdmin(ctx, "admin.peers"); err != nil {
		t.Errorf("AuthorizeAdmin for ops: %v", err)
	}
	if err := set.AuthorizeAdmin(hub.WithIdentity(context.Background(), "alice"), "admin.peers"); err == nil {
		t.Error("AuthorizeAdmin for alice: allowed")
	}
}

func TestDemoGrantsNoAdmin(t *testing.T) {
	for _, id := range []any{nil, "alice", token("olga", map[string]any{"role": "ops"}, "")} {
		if rules.Demo().AllowAdmin(id, "admin.peers") {
			t.Errorf("the demo grants admin.peers to %v", id)
		}
	}
	if !rules.Demo().Allow(nil, hub.Publish, "news") {
		t.Error("the demo no longer lets anyone publish")
	}
}

func TestIssuedAt(t *testing.T) {
	for _, tt := range []struct {
		iat  any
		want int64
		ok   bool
	}{
		{float64(1795000000), 1795000000, true},
		{json.Number("1795000000"), 1795000000, true},
		{"yesterday", 0, false},
		{nil, 0, false},
	} {
		tok := &rules.Token{Claims: map[string]any{}}
		if tt.iat != nil {
			tok.Claims["iat"] = tt.iat
		}
		at, ok := tok.IssuedAt()
		if ok != tt.ok || ok && !at.Equal(time.Unix(tt.want, 0)) {
			t.Errorf("iat %v: %v %v", tt.iat, at, ok)
		}
	}
}
