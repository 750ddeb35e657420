package server_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/golang-jwt/jwt/v5"
	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/hub/rules"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/server"
)

// newJWTServer is a demo server that takes JWTs signed with hmacSecret,
// with the walk-through's rules for peers without grants.
func newJWTServer(t *testing.T) *testServer {
	t.Helper()
	set := walkthroughRules(t)
	j := newJWT(t, &server.JWTOptions{Key: hmacSecret})
	return newTestServer(t, &server.Options{
		Hub:            hub.New(&hub.Options{Policy: set.Policy}),
		Authenticate:   j.Authenticate,
		Authorize:      set.Authorize,
		Reauthenticate: j.Verify,
	})
}

// walkthroughRules are the walk-through's rules for peers without grants.
func walkthroughRules(t testing.TB) *rules.Set {
	t.Helper()
	set, err := rules.Compile([]rules.Rule{
		{Allow: []string{"subscribe"}, To: []string{"user.{user}.>"}, Who: "authenticated"},
		{Allow: []string{"call"}, To: []string{"add"}, Who: "authenticated"},
		{Allow: []string{"publish", "address"}, To: []string{">"}, Who: "role=backend"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// hs signs claims with the test secret; a token without exp gets one an
// hour ahead (the hub refuses tokens that would never expire).
func hs(t testing.TB, claims jwt.MapClaims) string {
	if _, ok := claims["exp"]; !ok {
		claims["exp"] = time.Now().Add(time.Hour).Unix()
	}
	return sign(t, "HS256", hmacSecret, "", claims)
}

func TestJWTTransports(t *testing.T) {
	ts := newJWTServer(t)
	good := hs(t, claimsFor("alice", time.Minute))
	bad := hs(t, claimsFor("alice", -time.Minute))
	dial := func(token string, how string) (*websocket.Conn, *http.Response, error) {
		ctx, cancel := context.WithTimeout(t.Context(), testkit.Wait)
		defer cancel()
		opts := &websocket.DialOptions{HTTPHeader: http.Header{}}
		url := ts.wsURL()
		switch how {
		case "header":
			opts.HTTPHeader.Set("Authorization", "Bearer "+token)
		case "subprotocol":
			opts.Subprotocols = []string{server.Subprotocol, server.BearerSubprotocolPrefix + base64.RawURLEncoding.EncodeToString([]byte(token))}
		case "query":
			url += "?token=" + token
		}
		return websocket.Dial(ctx, url, opts)
	}
	for _, how := range []string{"header", "subprotocol", "query"} {
		t.Run(how, func(t *testing.T) {
			ws, _, err := dial(good, how)
			if err != nil {
				t.Fatalf("good token: %v", err)
			}
			defer ws.CloseNow()
			testkit.JSONEqual(t, `{"jsonrpc":"2.0","result":3,"id":1}`, roundTrip(t, ws, `{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}`))
			if _, resp, err := dial(bad, how); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("expired token: %v", err)
			}
		})
	}
	if _, resp, err := dial("", "none"); err == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no token: %v", err)
	}
	status, body := post(t, ts.URL, "application/json", `{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}`, http.Header{"Authorization": {"Bearer " + good}})
	if status != 200 || !strings.Contains(body, `"result":3`) {
		t.Errorf("POST with a JWT: %d %s", status, body)
	}
}

// dialToken opens a WebSocket with token in the Authorization header.
func (ts *testServer) dialToken(t *testing.T, token string) *websocket.Conn {
	t.Helper()
	return ts.dialRaw(t, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
}

func TestJWTGrantsAndRules(t *testing.T) {
	ts := newJWTServer(t)
	alice := ts.dialToken(t, hs(t, claimsFor("alice", time.Minute)))
	backend := ts.dialToken(t, hs(t, jwt.MapClaims{"sub": "orders", "role": "backend"}))
	granted := ts.dialToken(t, hs(t, jwt.MapClaims{"sub": "dave", "switchboard": map[string]any{
		"subscribe": []string{"news.*"}, "publish": []string{"news.today"}, "call": []string{},
	}}))
	tests := []struct {
		name string
		ws   *websocket.Conn
		req  string
		want string
	}{
		{"own inbox", alice, `{"jsonrpc":"2.0","method":"rpc.subscribe","params":["user.alice.inbox"],"id":1}`, `"result":{"topics":["user.alice.inbox"]`},
		{"other inbox refused", alice, `{"jsonrpc":"2.0","method":"rpc.subscribe","params":["user.bob.inbox"],"id":2}`, `"code":-32001`},
		{"still connected", alice, `{"jsonrpc":"2.0","method":"rpc.ping","id":3}`, `"result":{}`},
		{"user publish refused", alice, `{"jsonrpc":"2.0","method":"rpc.publish","params":["user.alice.inbox",1],"id":4}`, `"code":-32001`},
		{"user calls add", alice, `{"jsonrpc":"2.0","method":"add","params":[1,2],"id":5}`, `"result":3`},
		{"user calls sum refused", alice, `{"jsonrpc":"2.0","method":"sum","params":[1,2],"id":6}`, `"code":-32001`},
		{"backend publishes", backend, `{"jsonrpc":"2.0","method":"rpc.publish","params":["user.alice.inbox",{"n":1}],"id":7}`, `"delivered":1`},
		{"grants subscribe", granted, `{"jsonrpc":"2.0","method":"rpc.subscribe","params":["news.*"],"id":8}`, `"result":{"topics":["news.*"]`},
		{"grants not the rules", granted, `{"jsonrpc":"2.0","method":"rpc.subscribe","params":["user.dave.inbox"],"id":9}`, `"code":-32001`},
		{"grants publish", granted, `{"jsonrpc":"2.0","method":"rpc.publish","params":["news.today",1],"id":10}`, `"delivered":1`},
		{"grants publish elsewhere", granted, `{"jsonrpc":"2.0","method":"rpc.publish","params":["news.other",1],"id":11}`, `"code":-32001`},
		{"grants no provide", granted, `{"jsonrpc":"2.0","method":"rpc.provide","params":{"methods":["x"]},"id":12}`, `"code":-32001`},
		{"grants empty call", granted, `{"jsonrpc":"2.0","method":"add","params":[1,2],"id":13}`, `"code":-32001`},
		{"system methods stay", granted, `{"jsonrpc":"2.0","method":"rpc.discover","id":14}`, `"result":`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := roundTrip(t, tt.ws, tt.req)
			for strings.Contains(got, `"rpc.event"`) { // an event of an earlier publish
				got = read(t, tt.ws)
			}
			if !strings.Contains(got, tt.want) {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestRPCAuth(t *testing.T) {
	ts := newJWTServer(t)
	ws := ts.dialToken(t, hs(t, claimsFor("alice", time.Minute)))
	exp := time.Now().Add(time.Hour).Unix()
	newer := hs(t, jwt.MapClaims{"sub": "alice", "exp": exp, "switchboard": map[string]any{"publish": []string{"chat.>"}}})

	got := roundTrip(t, ws, `{"jsonrpc":"2.0","method":"rpc.publish","params":["chat.x",1],"id":1}`)
	if !strings.Contains(got, `-32001`) {
		t.Fatalf("publish before rpc.auth: %s", got)
	}
	testkit.JSONEqual(t, fmt.Sprintf(`{"jsonrpc":"2.0","result":{"user":"alice","expires":%d},"id":2}`, exp),
		roundTrip(t, ws, `{"jsonrpc":"2.0","method":"rpc.auth","params":{"token":"`+newer+`"},"id":2}`))
	if got := roundTrip(t, ws, `{"jsonrpc":"2.0","method":"rpc.publish","params":["chat.x",1],"id":3}`); !strings.Contains(got, `"delivered":0`) {
		t.Errorf("publish with the new grants: %s", got)
	}

	for name, tok := range map[string]string{
		"other sub": hs(t, claimsFor("mallory", time.Hour)),
		"expired":   hs(t, claimsFor("alice", -time.Second)),
		"garbage":   "x.y.z",
	} {
		got := roundTrip(t, ws, `{"jsonrpc":"2.0","method":"rpc.auth","params":{"token":"`+tok+`"},"id":4}`)
		if !strings.Contains(got, `-32001`) {
			t.Errorf("%s: %s", name, got)
		}
	}
	// The old token still holds: its grants, and the connection.
	if got := roundTrip(t, ws, `{"jsonrpc":"2.0","method":"rpc.publish","params":["chat.x",1],"id":5}`); !strings.Contains(got, `"delivered":0`) {
		t.Errorf("publish after refused replacements: %s", got)
	}
	if got := roundTrip(t, ws, `{"jsonrpc":"2.0","method":"rpc.auth","params":{},"id":6}`); !strings.Contains(got, `-32602`) {
		t.Errorf("no token: %s", got)
	}
	status, body := post(t, ts.URL, "application/json", `{"jsonrpc":"2.0","method":"rpc.auth","params":{"token":"`+newer+`"},"id":1}`,
		http.Header{"Authorization": {"Bearer " + newer}})
	if status != 200 || !strings.Contains(body, "needs a WebSocket") {
		t.Errorf("rpc.auth over POST: %d %s", status, body)
	}
}

// TestTokenExpiry closes a connection whose token expires with 4001, and
// keeps one whose token was replaced in time.
func TestTokenExpiry(t *testing.T) {
	ts := newJWTServer(t)
	const ttl = 2 * time.Second // exp has a resolution of a second
	start := time.Now()
	expiring := ts.dialToken(t, hs(t, claimsFor("alice", ttl)))
	refreshed := ts.dialToken(t, hs(t, claimsFor("alice", ttl)))
	got := roundTrip(t, refreshed, `{"jsonrpc":"2.0","method":"rpc.auth","params":{"token":"`+hs(t, claimsFor("alice", time.Hour))+`"},"id":1}`)
	if !strings.Contains(got, `"user":"alice"`) {
		t.Fatalf("rpc.auth: %s", got)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, _, err := expiring.Read(ctx)
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != server.CloseTokenExpired || ce.Reason != "token expired" {
		t.Fatalf("expiring connection: %v, want close 4001 token expired", err)
	}
	if waited := time.Since(start); waited < ttl-time.Second {
		t.Errorf("closed after %v, before the token expired", waited)
	}
	if got := roundTrip(t, refreshed, `{"jsonrpc":"2.0","method":"rpc.ping","id":2}`); !strings.Contains(got, `"result":{}`) {
		t.Errorf("refreshed connection: %s", got)
	}
}
