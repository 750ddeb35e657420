package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/golang-jwt/jwt/v5"
	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/hub/rules"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
	"github.com/switchboard-rpc/switchboard/server"
)

// newAdminServer is a JWT server whose admin API is granted by the rule
// "role=ops", and by the tokens' "admin" grants; the operator's endpoint
// is served at adminURL, behind the static token "op-secret".
func newAdminServer(t *testing.T) (ts *testServer, adminURL string) {
	t.Helper()
	set, err := rules.Compile([]rules.Rule{
		{Allow: []string{"subscribe"}, To: []string{">"}, Who: "authenticated"},
		{Allow: []string{"admin"}, To: []string{"admin.*"}, Who: "role=ops"},
	})
	if err != nil {
		t.Fatal(err)
	}
	j := newJWT(t, &server.JWTOptions{Key: hmacSecret})
	ts = newTestServer(t, &server.Options{
		Hub:            hub.New(&hub.Options{Policy: set.Policy}),
		Authenticate:   j.Authenticate,
		Reauthenticate: j.Verify,
		AuthorizeAdmin: set.AuthorizeAdmin,
	})
	op := httptest.NewServer(ts.srv.AdminHandler(server.TokenAuth(map[string]string{"op-secret": "operator"})))
	t.Cleanup(op.Close)
	return ts, op.URL
}

// adminPost posts one call to url/rpc with token and returns its reply.
func adminPost(t *testing.T, url, token, method string, params any) (status int, res json.RawMessage, code int) {
	t.Helper()
	p := []byte("{}")
	if params != nil {
		p, _ = json.Marshal(params)
	}
	h := http.Header{}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	status, body := post(t, url, "application/json", `{"jsonrpc":"2.0","method":"`+method+`","params":`+string(p)+`,"id":1}`, h)
	var r struct {
		Result json.RawMessage
		Error  *struct{ Code int }
	}
	_ = json.Unmarshal([]byte(body), &r)
	if r.Error != nil {
		code = r.Error.Code
	}
	return status, r.Result, code
}

func TestAdminNeedsTheGrant(t *testing.T) {
	ts, _ := newAdminServer(t)
	user := hs(t, jwt.MapClaims{"sub": "alice"})
	ops := hs(t, jwt.MapClaims{"sub": "carol", "role": "ops"})
	granted := hs(t, jwt.MapClaims{"sub": "svc", "switchboard": map[string]any{"admin": []string{"admin.peers"}}})
	for _, method := range server.AdminMethods {
		if _, _, code := adminPost(t, ts.URL, user, method, map[string]any{}); code != -32001 {
			t.Errorf("%s by a user: code %d, want -32001", method, code)
		}
	}
	if _, res, code := adminPost(t, ts.URL, ops, "admin.info", map[string]any{}); code != 0 || !strings.Contains(string(res), `"nodes"`) {
		t.Errorf("admin.info by ops: %s, code %d", res, code)
	}
	if _, _, code := adminPost(t, ts.URL, granted, "admin.peers", map[string]any{}); code != 0 {
		t.Errorf("admin.peers by a granted token: code %d", code)
	}
	if _, _, code := adminPost(t, ts.URL, granted, "admin.disconnect", map[string]any{"user": "x"}); code != -32001 {
		t.Errorf("admin.disconnect by a token granted admin.peers only: code %d, want -32001", code)
	}
}

// With no AuthorizeAdmin nobody may call the admin API on the main
// endpoint, whatever the Policy allows.
func TestAdminClosedByDefault(t *testing.T) {
	ts := newTestServer(t, nil) // hub.AllowAll
	if _, _, code := adminPost(t, ts.URL, "", "admin.peers", map[string]any{}); code != -32001 {
		t.Fatalf("admin.peers: code %d, want -32001", code)
	}
	_, res, code := adminPost(t, ts.URL, "", "rpc.discover", nil)
	if code != 0 || !strings.Contains(string(res), `"openrpc"`) || strings.Contains(string(res), "admin.") {
		t.Fatal("rpc.discover lists the admin methods to a caller who may not call them")
	}
}

func TestAdminHandlerOperator(t *testing.T) {
	ts, adminURL := newAdminServer(t)
	if status, _, _ := adminPost(t, adminURL, "", "admin.info", map[string]any{}); status != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", status)
	}
	// A JSON Web Token, however privileged, does not open the operator's
	// endpoint.
	if status, _, _ := adminPost(t, adminURL, hs(t, jwt.MapClaims{"sub": "carol", "role": "ops"}), "admin.info", map[string]any{}); status != http.StatusUnauthorized {
		t.Errorf("JWT: %d, want 401", status)
	}
	_, res, code := adminPost(t, adminURL, "op-secret", "rpc.discover", nil)
	for _, m := range server.AdminMethods {
		if !strings.Contains(string(res), `"name":"`+m+`"`) {
			t.Errorf("rpc.discover lacks %s (code %d)", m, code)
		}
	}

	alice := ts.dialToken(t, hs(t, jwt.MapClaims{"sub": "alice"}))
	roundTrip(t, alice, `{"jsonrpc":"2.0","method":"rpc.subscribe","params":["news"],"id":1}`)
	_, res, code = adminPost(t, adminURL, "op-secret", "admin.peers", map[string]any{"user": "alice"})
	var page hub.PeerPage
	if err := json.Unmarshal(res, &page); err != nil || code != 0 {
		t.Fatalf("admin.peers: %s, code %d", res, code)
	}
	if len(page.Peers) != 1 || page.Peers[0].User != "alice" || !strings.HasPrefix(page.Peers[0].Remote, "127.0.0.1:") ||
		len(page.Peers[0].Topics) != 1 {
		t.Fatalf("alice: %+v", page.Peers)
	}
	_, res, _ = adminPost(t, adminURL, "op-secret", "admin.broadcast", map[string]any{"topics": []string{"news", "other"}, "data": map[string]int{"n": 1}})
	if !strings.Contains(string(res), `{"topic":"news","delivered":1`) {
		t.Fatalf("admin.broadcast: %s", res)
	}
	if got := read(t, alice); !strings.Contains(got, `"topic":"news"`) {
		t.Fatalf("alice got %s", got)
	}
	_, res, _ = adminPost(t, adminURL, "op-secret", "admin.unsubscribe", map[string]any{"user": "alice", "topic": ">"})
	if !strings.Contains(string(res), `"topics":["news"]`) {
		t.Fatalf("admin.unsubscribe: %s", res)
	}
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","method":"rpc.revoked","params":{"topics":["news"],"methods":[]}}`, read(t, alice))
}

// A kick with revoke closes the user's peers with the code given, and
// refuses the user's tokens issued before it, over WebSocket, POST and
// rpc.auth; a token issued after it is accepted.
func TestAdminDisconnectRevokes(t *testing.T) {
	ts, adminURL := newAdminServer(t)
	old := hs(t, jwt.MapClaims{"sub": "alice", "iat": time.Now().Add(-time.Hour).Unix()})
	noIat := hs(t, jwt.MapClaims{"sub": "alice"})
	alice := ts.dialToken(t, old)
	bob := ts.dialToken(t, hs(t, jwt.MapClaims{"sub": "bob"}))

	_, res, code := adminPost(t, adminURL, "op-secret", "admin.disconnect", map[string]any{"user": "alice", "code": 4009, "reason": "leaked", "revoke": true})
	var out struct {
		Disconnected  []hub.PeerInfo
		RevokedBefore time.Time `json:"revoked_before"`
	}
	if err := json.Unmarshal(res, &out); err != nil || code != 0 || len(out.Disconnected) != 1 {
		t.Fatalf("admin.disconnect: %s, code %d", res, code)
	}
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Wait)
	defer cancel()
	_, _, err := alice.Read(ctx)
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != 4009 || ce.Reason != "leaked" {
		t.Fatalf("alice's read: %v, want close 4009 leaked", err)
	}
	roundTrip(t, bob, `{"jsonrpc":"2.0","method":"rpc.ping","id":1}`) // bob stays

	for name, tok := range map[string]string{"old": old, "no iat": noIat} {
		if _, resp, err := websocket.Dial(ctx, ts.wsURL(), &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + tok}}}); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s token after the kick: %v, want 401", name, err)
		}
		if status, _, _ := adminPost(t, ts.URL, tok, "rpc.ping", nil); status != http.StatusUnauthorized {
			t.Errorf("%s token over POST: %d, want 401", name, status)
		}
	}
	fresh := hs(t, jwt.MapClaims{"sub": "alice", "iat": out.RevokedBefore.Unix()})
	again := ts.dialToken(t, fresh)
	roundTrip(t, again, `{"jsonrpc":"2.0","method":"rpc.ping","id":1}`)
	// rpc.auth refuses an old token too.
	got := roundTrip(t, again, `{"jsonrpc":"2.0","method":"rpc.auth","params":{"token":"`+old+`"},"id":2}`)
	if !strings.Contains(got, `"code":-32001`) {
		t.Fatalf("rpc.auth with the old token: %s", got)
	}
}

// Callable, which the MCP gateway asks before listing and calling a tool,
// answers the admin methods as their callers are answered: an admin
// identity may, another gets -32001.
func TestAdminCallable(t *testing.T) {
	ts, _ := newAdminServer(t)
	ops := hub.WithIdentity(t.Context(), rules.NewIdentity(&rules.Token{Subject: "carol", Claims: map[string]any{"role": "ops"}}))
	user := hub.WithIdentity(t.Context(), rules.NewIdentity(&rules.Token{Subject: "alice", Claims: map[string]any{}}))
	for _, m := range server.AdminMethods {
		if err := ts.srv.Callable(ops, m); err != nil {
			t.Errorf("Callable(%s) for ops: %v", m, err)
		}
		var e *peer.Error
		if err := ts.srv.Callable(user, m); !errors.As(err, &e) || e.Code != peer.CodeUnauthorized {
			t.Errorf("Callable(%s) for a user: %v, want -32001", m, err)
		}
	}
}

// admin.refusals lists the last refusals of the audit trail, newest
// first: a token refused at /rpc, an admin call refused for want of the
// grant.
func TestAdminRefusals(t *testing.T) {
	ts, adminURL := newAdminServer(t)
	if status, _, _ := adminPost(t, ts.URL, "not-a-token", "rpc.ping", nil); status != http.StatusUnauthorized {
		t.Fatalf("a bad token: %d, want 401", status)
	}
	if _, _, code := adminPost(t, ts.URL, hs(t, jwt.MapClaims{"sub": "alice"}), "admin.peers", nil); code != -32001 {
		t.Fatalf("admin.peers by alice: code %d, want -32001", code)
	}
	_, res, code := adminPost(t, adminURL, "op-secret", "admin.refusals", map[string]any{"limit": 10})
	var out struct{ Refusals []hub.RefusalDetail }
	if err := json.Unmarshal(res, &out); err != nil || code != 0 || len(out.Refusals) != 2 {
		t.Fatalf("admin.refusals: %s, code %d", res, code)
	}
	alice, bad := out.Refusals[0], out.Refusals[1]
	if alice.Kind != "rules" || alice.Identity != "alice" || alice.Action != "call" || alice.Target != "admin.peers" || alice.Error == "" {
		t.Errorf("the newest, alice's admin call: %+v", alice)
	}
	if bad.Kind != "auth" || bad.Action != "POST" || bad.Target != "/rpc" || bad.Status != 401 ||
		!strings.HasPrefix(bad.Remote, "127.0.0.1:") || bad.Time.After(alice.Time) {
		t.Errorf("the bad token: %+v", bad)
	}
	if _, res, _ := adminPost(t, adminURL, "op-secret", "admin.refusals", map[string]any{"limit": 1}); !strings.Contains(string(res), `"target":"admin.peers"`) ||
		strings.Contains(string(res), `"/rpc"`) {
		t.Errorf("admin.refusals with limit 1: %s", res)
	}
}
