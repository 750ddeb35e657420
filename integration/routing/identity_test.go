package routing_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/golang-jwt/jwt/v5"
	"github.com/switchboard-rpc/switchboard/client"
	"github.com/switchboard-rpc/switchboard/integration/internal/hubproc"
	"github.com/switchboard-rpc/switchboard/integration/internal/testclient"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
)

// These tests run a hub process that takes JSON Web Tokens and judges
// them by the walk-through's rules, or by their grants (docs/security.md,
// "Identity and rules"): an identity is a name, never a pattern, and a narrowed grant
// ends what it no longer allows.

var jwtSecret = []byte("the identity tests' HMAC secret, 32 bytes or more")

// startJWTHub starts a hub whose config takes JWTs signed with jwtSecret,
// lets each user read their own topics (user.{user}.>) and backends
// (role=backend) publish and call anything.
func startJWTHub(t *testing.T) *hubproc.Hub {
	t.Helper()
	dir := t.TempDir()
	key := testkit.WriteFile(t, filepath.Join(dir, "hub.key"), jwtSecret)
	config := filepath.Join(dir, "hub.yaml")
	if err := os.WriteFile(config, []byte(`demo: true
jwt-key: `+key+`
anonymous: false
rules:
  - allow: [subscribe]
    to: ["user.{user}.>"]
    who: authenticated
  - allow: [publish, call]
    to: [">"]
    who: role=backend
`), 0o600); err != nil {
		t.Fatal(err)
	}
	return hubproc.Start(t, &hubproc.Options{Args: []string{"-config", config}})
}

// jwtFor signs a token for sub with the extra claims, valid for an hour.
func jwtFor(t *testing.T, sub string, extra jwt.MapClaims) string {
	return testkit.HS256(t, jwtSecret, sub, time.Hour, extra)
}

// dialAs opens a raw WebSocket with token.
func dialAs(t *testing.T, h *hubproc.Hub, token string) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, h.WebSocketURL(), &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { _ = c.CloseNow() })
	return c
}

// call sends a request on c and returns the answer, skipping events.
func call(t *testing.T, c *websocket.Conn, method, params string) message {
	t.Helper()
	testclient.Send(t, c, `{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":`+params+`}`)
	for {
		m := decode(t, testclient.Receive(t, c, 10*time.Second))
		if m.Method == "" {
			return m
		}
	}
}

// Defect: with the rule user.{user}.>, a token whose sub is "*" read
// everyone's topics, and subs with dots or "@" had no topics of their
// own. Identities are now escaped into one word (hub.UserWord).
func TestIdentityIsAName(t *testing.T) {
	h := startJWTHub(t)
	backend := dialAs(t, h, jwtFor(t, "orders", jwt.MapClaims{"role": "backend"}))
	alice := dialAs(t, h, jwtFor(t, "alice", nil))
	star := dialAs(t, h, jwtFor(t, "*", nil))
	email := dialAs(t, h, jwtFor(t, "john.doe@example.com", nil))
	a := dialAs(t, h, jwtFor(t, "a", nil))

	for _, tt := range []struct {
		who     string
		c       *websocket.Conn
		pattern string
		allowed bool
	}{
		{"*", star, "user.*.>", false},
		{"*", star, "user.*.inbox", false},
		{"*", star, "user.:2a.inbox", true},
		{"alice", alice, "user.alice.inbox", true},
		{"john.doe@example.com", email, "user." + client.UserWord("john.doe@example.com") + ".inbox", true},
		{"john.doe@example.com", email, "user.john.doe@example.com.inbox", false},
		{"a", a, "user.a:2eb.>", false}, // what belongs to a.b
	} {
		m := call(t, tt.c, "rpc.subscribe", `[`+fmt.Sprintf("%q", tt.pattern)+`]`)
		if allowed := m.Error == nil; allowed != tt.allowed {
			t.Errorf("%s subscribing to %s: %s %+v, want allowed %v", tt.who, tt.pattern, m.Result, m.Error, tt.allowed)
		}
	}
	m := call(t, backend, "rpc.publish", `["user.alice.inbox", "for alice"]`)
	if string(m.Result) == "" || !strings.Contains(string(m.Result), `"delivered":1`) {
		t.Errorf("publish to alice's inbox: %s %+v, want delivered to alice alone", m.Result, m.Error)
	}
	m = call(t, backend, "rpc.publish", `["user.john:2edoe:40example:2ecom.inbox", "for john"]`)
	if !strings.Contains(string(m.Result), `"delivered":1`) {
		t.Errorf("publish to john's inbox: %s %+v", m.Result, m.Error)
	}
	if ev := decode(t, testclient.Receive(t, email, 10*time.Second)); ev.Method != "rpc.event" || !strings.Contains(string(ev.Params), "for john") {
		t.Errorf("john got %s %s", ev.Method, ev.Params)
	}
	m = call(t, email, "rpc.whoami", `{}`)
	if !strings.Contains(string(m.Result), `"userWord":"john:2edoe:40example:2ecom"`) {
		t.Errorf("rpc.whoami: %s", m.Result)
	}
}

// Defect: after rpc.auth with a token whose grants dropped news.* and
// billing.*, the subscription to news.* kept delivering and billing.*
// was still forwarded to the peer. Now both end at once, the peer is
// told (rpc.revoked), and the Go client ends the subscription with
// ErrRevoked and drops the provision.
func TestNarrowedGrantsEnd(t *testing.T) {
	h := startJWTHub(t)
	grants := func(subscribe, provide []string) jwt.MapClaims {
		return jwt.MapClaims{"switchboard": map[string]any{"subscribe": subscribe, "provide": provide}}
	}
	var token atomic.Pointer[string]
	wide := jwtFor(t, "alice", grants([]string{"news.*", "user.alice.>"}, []string{"billing.*", "report.*"}))
	token.Store(&wide)
	revoked := make(chan client.Revoked, 1)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	alice, err := client.Dial(ctx, h.WebSocketURL(), &client.Options{
		TokenFunc: func(context.Context) (string, error) { return *token.Load(), nil },
		OnRevoked: func(r client.Revoked) { revoked <- r },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	news := make(chan client.Event, 10)
	sub, err := alice.Subscribe(ctx, "news.*", func(ev client.Event) { news <- ev })
	if err != nil {
		t.Fatal(err)
	}
	serve := peer.HandlerFunc(func(_ context.Context, req *peer.Request) (any, error) { return "served " + req.Method, nil })
	for _, m := range []string{"billing.*", "report.*"} {
		if _, err := alice.Provide(ctx, m, serve); err != nil {
			t.Fatal(err)
		}
	}
	backend := dialAs(t, h, jwtFor(t, "orders", jwt.MapClaims{"role": "backend"}))
	if m := call(t, backend, "rpc.publish", `["news.today", 1]`); !strings.Contains(string(m.Result), `"delivered":1`) {
		t.Fatalf("publish before: %s %+v", m.Result, m.Error)
	}
	if m := call(t, backend, "billing.charge", `{}`); string(m.Result) != `"served billing.charge"` {
		t.Fatalf("billing.charge before: %s %+v", m.Result, m.Error)
	}
	select {
	case <-news:
	case <-ctx.Done():
		t.Fatal("no event before the narrowing")
	}

	narrow := jwtFor(t, "alice", grants([]string{"user.alice.>"}, []string{"report.*"}))
	token.Store(&narrow)
	if err := alice.Call(ctx, "rpc.auth", map[string]string{"token": narrow}, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-revoked:
		if fmt.Sprint(r.Topics, r.Methods) != "[news.*] [billing.*]" {
			t.Errorf("revoked %+v", r)
		}
	case <-ctx.Done():
		t.Fatal("not told of the revocation")
	}
	if err := sub.Err(); !errors.Is(err, client.ErrRevoked) {
		t.Errorf("subscription's Err = %v, want ErrRevoked", err)
	}
	if m := call(t, backend, "rpc.publish", `["news.today", 2]`); !strings.Contains(string(m.Result), `"delivered":0`) {
		t.Errorf("publish after: %s %+v, want delivered to nobody", m.Result, m.Error)
	}
	if m := call(t, backend, "billing.charge", `{}`); m.Error == nil || m.Error.Code != int(peer.CodeMethodNotFound) {
		t.Errorf("billing.charge after: %s %+v, want -32601", m.Result, m.Error)
	}
	if m := call(t, backend, "report.x", `{}`); string(m.Result) != `"served report.x"` {
		t.Errorf("report.x after: %s %+v", m.Result, m.Error)
	}
}
