package admin_test

import (
	"errors"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/switchboard-rpc/switchboard/integration/internal/hubproc"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

// adminCalls are a valid call of every admin method.
var adminCalls = []struct {
	method string
	params map[string]any
}{
	{"admin.peers", map[string]any{"user": "alice"}},
	{"admin.topics", map[string]any{"pattern": "chat.>"}},
	{"admin.providers", map[string]any{"method": "billing.charge"}},
	{"admin.info", map[string]any{}},
	{"admin.disconnect", map[string]any{"user": "nobody"}},
	{"admin.unsubscribe", map[string]any{"user": "nobody", "topic": "chat.>"}},
	{"admin.publish", map[string]any{"topic": "news", "data": 1}},
	{"admin.broadcast", map[string]any{"topics": []string{"news", "chat.room1"}, "data": 1}},
	{"admin.refusals", map[string]any{"limit": 10}},
}

// Every admin method answers an identity with the admin grant (by a rule
// or by the token's grants) and the operator's token on the admin
// listener, and refuses a user without the grant with -32001, and a
// request without the operator's token on the admin listener with 401.
func TestEveryMethodNeedsTheGrant(t *testing.T) {
	h := startHub(t, "", "")
	user := jwtFor(t, "alice", nil)
	ops := jwtFor(t, "carol", jwt.MapClaims{"role": "ops"})
	granted := jwtFor(t, "svc", jwt.MapClaims{"switchboard": map[string]any{"admin": []string{"admin.*"}}})
	for _, c := range adminCalls {
		if err := call(t, h.URL(), user, c.method, c.params, nil); codeOf(err) != -32001 {
			t.Errorf("%s by a user without the grant: %v, want -32001", c.method, err)
		}
		if err := call(t, h.URL(), ops, c.method, c.params, nil); err != nil {
			t.Errorf("%s by role=ops: %v", c.method, err)
		}
		if err := call(t, h.URL(), granted, c.method, c.params, nil); err != nil {
			t.Errorf("%s by a token granted admin.*: %v", c.method, err)
		}
		if err := call(t, h.AdminURL(), opToken, c.method, c.params, nil); err != nil {
			t.Errorf("%s by the operator: %v", c.method, err)
		}
		var refused errHTTP
		if err := call(t, h.AdminURL(), "", c.method, c.params, nil); !errors.As(err, &refused) || refused.status != http.StatusUnauthorized {
			t.Errorf("%s on the admin listener without a token: %v, want 401", c.method, err)
		}
		// A JSON Web Token, whatever it grants, is not the operator's.
		if err := call(t, h.AdminURL(), ops, c.method, c.params, nil); !errors.As(err, &refused) || refused.status != http.StatusUnauthorized {
			t.Errorf("%s on the admin listener with a JWT: %v, want 401", c.method, err)
		}
	}

	// rpc.discover on the admin listener describes them all, for gen-ts
	// and gen-py; on the main listener, a user sees none of them.
	var doc struct {
		Methods []struct{ Name string } `json:"methods"`
	}
	mustCall(t, h.AdminURL(), opToken, "rpc.discover", map[string]any{}, &doc)
	names := map[string]bool{}
	for _, m := range doc.Methods {
		names[m.Name] = true
	}
	for _, c := range adminCalls {
		if !names[c.method] {
			t.Errorf("rpc.discover on the admin listener lacks %s", c.method)
		}
	}
	doc.Methods = nil
	mustCall(t, h.URL(), user, "rpc.discover", map[string]any{}, &doc)
	for _, m := range doc.Methods {
		if strings.HasPrefix(m.Name, "admin.") {
			t.Errorf("rpc.discover shows %s to a user without the grant", m.Name)
		}
	}
}

// A demo hub lets anyone do anything but call the admin API.
func TestDemoDoesNotGrantAdmin(t *testing.T) {
	h := hubproc.StartDemo(t)
	for _, c := range adminCalls {
		if err := call(t, h.URL(), "", c.method, c.params, nil); codeOf(err) != -32001 {
			t.Errorf("%s on a demo hub: %v, want -32001", c.method, err)
		}
	}
}

// A kick with revoke on a hub alone: the revocation holds across a
// reload (SIGHUP), a token issued at or after revoked_before is
// accepted.
func TestRevocationSurvivesReload(t *testing.T) {
	h := startHub(t, "", "", "-log-level", "info") // to see the reload
	old := jwtFor(t, "alice", jwt.MapClaims{"iat": time.Now().Add(-time.Minute).Unix()})
	p, err := dialRaw(h.Addr(), old)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	var res struct {
		Disconnected  []struct{ ID string }
		RevokedBefore time.Time `json:"revoked_before"`
	}
	mustCall(t, h.AdminURL(), opToken, "admin.disconnect", map[string]any{"user": "alice", "revoke": true}, &res)
	if len(res.Disconnected) != 1 || res.RevokedBefore.IsZero() {
		t.Fatalf("admin.disconnect: %+v", res)
	}
	if err := syscall.Kill(h.Pid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the reload", func() bool { return strings.Contains(h.Log(), "configuration reloaded") })
	var refused errHTTP
	if _, err := dialRaw(h.Addr(), old); !errors.As(err, &refused) || refused.status != http.StatusUnauthorized {
		t.Fatalf("the old token after the kick and a reload: %v, want 401", err)
	}
	fresh, err := dialRaw(h.Addr(), jwtFor(t, "alice", jwt.MapClaims{"iat": res.RevokedBefore.Unix()}))
	if err != nil {
		t.Fatalf("a token issued after the kick: %v", err)
	}
	fresh.close()
}
