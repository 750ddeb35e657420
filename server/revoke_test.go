package server_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
)

// TestRPCAuthNarrows replaces a token with one whose grants drop news.*
// and billing.*: the subscription to news.* and the provided billing.*
// end at once, the peer is told with rpc.revoked before the result of
// rpc.auth (which lists them too), and nothing more is delivered or
// forwarded under them; what the new grants allow carries on.
func TestRPCAuthNarrows(t *testing.T) {
	ts := newJWTServer(t)
	grants := func(subscribe, provide []string) map[string]any {
		return map[string]any{"subscribe": subscribe, "provide": provide}
	}
	alice := ts.dialToken(t, hs(t, jwt.MapClaims{"sub": "alice", "switchboard": grants(
		[]string{"news.*", "user.alice.>"}, []string{"billing.*", "report.*"})}))
	for i, req := range []string{
		`{"jsonrpc":"2.0","method":"rpc.subscribe","params":["news.today"],"id":1}`,
		`{"jsonrpc":"2.0","method":"rpc.subscribe","params":["user.alice.inbox"],"id":2}`,
		`{"jsonrpc":"2.0","method":"rpc.provide","params":{"methods":["billing.*","report.x"]},"id":3}`,
	} {
		if got := roundTrip(t, alice, req); !strings.Contains(got, `"result"`) {
			t.Fatalf("request %d: %s", i+1, got)
		}
	}
	backendWS := ts.dialToken(t, hs(t, jwt.MapClaims{"sub": "orders", "switchboard": map[string]any{"publish": []string{">"}}}))
	backend := peer.NewConn(peer.WebSocket(backendWS), nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = backend.Serve(context.Background())
	}()
	t.Cleanup(func() {
		backend.Close()
		<-done
	})

	exp := time.Now().Add(time.Hour).Unix()
	narrower := hs(t, jwt.MapClaims{"sub": "alice", "exp": exp, "switchboard": grants([]string{"user.alice.>"}, []string{"report.*"})})
	write(t, alice, `{"jsonrpc":"2.0","method":"rpc.auth","params":{"token":"`+narrower+`"},"id":4}`)
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","method":"rpc.revoked","params":{"topics":["news.today"],"methods":["billing.*"]}}`, read(t, alice))
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","result":{"user":"alice","expires":`+strconv.FormatInt(exp, 10)+`,"revoked":{"topics":["news.today"],"methods":["billing.*"]}},"id":4}`, read(t, alice))

	for topic, n := range map[string]int{"news.today": 0, "user.alice.inbox": 1} {
		var res struct{ Delivered int }
		if err := backend.Call(t.Context(), "rpc.publish", []any{topic, 1}, &res); err != nil || res.Delivered != n {
			t.Errorf("publish on %s: %+v, %v; want %d delivered", topic, res, err, n)
		}
	}
	if got := read(t, alice); !strings.Contains(got, `"topic":"user.alice.inbox"`) {
		t.Errorf("alice got %s, want the event on her inbox", got)
	}
	err := backend.Call(t.Context(), "billing.charge", nil, nil)
	if e, ok := err.(*peer.Error); !ok || e.Code != peer.CodeMethodNotFound {
		t.Errorf("billing.charge after the narrowing: %v, want -32601", err)
	}

	// report.x is still forwarded to alice.
	answered := make(chan error, 1)
	go func() { answered <- backend.Call(context.Background(), "report.x", nil, nil) }()
	var fwd struct {
		ID     json.RawMessage
		Method string
	}
	if err := json.Unmarshal([]byte(read(t, alice)), &fwd); err != nil || fwd.Method != "report.x" {
		t.Fatalf("alice got %+v, %v; want the call of report.x", fwd, err)
	}
	write(t, alice, `{"jsonrpc":"2.0","result":"ok","id":`+string(fwd.ID)+`}`)
	if err := testkit.Recv(t, answered, "report.x answered"); err != nil {
		t.Errorf("report.x: %v", err)
	}

	// A token that narrows nothing more: no rpc.revoked, no "revoked".
	same := hs(t, jwt.MapClaims{"sub": "alice", "exp": time.Now().Add(time.Hour).Unix(), "switchboard": grants([]string{"user.alice.>"}, []string{"report.*"})})
	if got := roundTrip(t, alice, `{"jsonrpc":"2.0","method":"rpc.auth","params":{"token":"`+same+`"},"id":5}`); strings.Contains(got, "revoked") || !strings.Contains(got, `"id":5`) {
		t.Errorf("rpc.auth narrowing nothing: %s", got)
	}
}
