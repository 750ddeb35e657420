package server_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/coder/websocket"
	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
	"github.com/switchboard-rpc/switchboard/server"
)

func bearerProtocol(token string) string {
	return server.BearerSubprotocolPrefix + base64.RawURLEncoding.EncodeToString([]byte(token))
}

func TestBearerToken(t *testing.T) {
	for _, tt := range []struct {
		name, query string
		header      http.Header
		want        string
	}{
		{"none", "", nil, ""},
		{"header", "", http.Header{"Authorization": {"Bearer s3cret"}}, "s3cret"},
		{"header scheme in any case", "", http.Header{"Authorization": {"bearer s3cret"}}, "s3cret"},
		{"other scheme", "?token=q", http.Header{"Authorization": {"Basic czNjcmV0"}}, ""},
		{"query", "?token=q", nil, "q"},
		{"subprotocol", "", http.Header{"Sec-Websocket-Protocol": {"switchboard, " + bearerProtocol("s p/a+c=e")}}, "s p/a+c=e"},
		{"subprotocol in its own header line", "", http.Header{"Sec-Websocket-Protocol": {"switchboard", bearerProtocol("s3cret")}}, "s3cret"},
		{"subprotocol not base64url", "?token=q", http.Header{"Sec-Websocket-Protocol": {"switchboard.bearer.a+b"}}, ""},
		{"switchboard alone", "?token=q", http.Header{"Sec-Websocket-Protocol": {"switchboard"}}, "q"},
		{"header before subprotocol", "", http.Header{"Authorization": {"Bearer h"}, "Sec-Websocket-Protocol": {bearerProtocol("p")}}, "h"},
		{"subprotocol before query", "?token=q", http.Header{"Sec-Websocket-Protocol": {bearerProtocol("p")}}, "p"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/rpc"+tt.query, nil)
			for k, v := range tt.header {
				r.Header[k] = v
			}
			if got := server.BearerToken(r); got != tt.want {
				t.Fatalf("BearerToken = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTokenAuth(t *testing.T) {
	auth := server.TokenAuth(map[string]string{"s3cret": "alice", "t0ken": "bob"})
	for token, want := range map[string]any{"s3cret": "alice", "t0ken": "bob", "s3cre": nil, "s3crets": nil, "S3CRET": nil, "": nil} {
		r := httptest.NewRequest("GET", "/rpc", nil)
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		id, err := auth(r)
		if id != want || (want == nil) != (err != nil) {
			t.Errorf("token %q: %v, %v; want %v", token, id, err, want)
		}
	}
}

// TestSubprotocol: the hub selects "switchboard" when a client offers it,
// with or without a token, and nothing when the client offers nothing; a
// token in the subprotocol authenticates like one in a header.
func TestSubprotocol(t *testing.T) {
	mux := peer.NewMux()
	mux.Handle("whoami", peer.Func(func(ctx context.Context, _ struct{}) (any, error) {
		return hub.Identity(ctx), nil
	}))
	open := newTestServer(t, nil)
	authed := newTestServer(t, &server.Options{Router: mux, Authenticate: server.TokenAuth(map[string]string{"s3cret": "alice"})})

	for _, tt := range []struct {
		name   string
		ts     *testServer
		offer  []string
		status int    // 0: the upgrade succeeds
		chosen string // the subprotocol selected
	}{
		{"none offered", open, nil, 0, ""},
		{"switchboard offered", open, []string{"switchboard"}, 0, "switchboard"},
		{"other offered", open, []string{"chat"}, 0, ""},
		{"token offered, no auth", open, []string{"switchboard", bearerProtocol("s3cret")}, 0, "switchboard"},
		{"token", authed, []string{"switchboard", bearerProtocol("s3cret")}, 0, "switchboard"},
		{"wrong token", authed, []string{"switchboard", bearerProtocol("s3cre")}, 401, ""},
		{"no token", authed, []string{"switchboard"}, 401, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ws, resp, err := websocket.Dial(timeout(t), tt.ts.wsURL(), &websocket.DialOptions{Subprotocols: tt.offer})
			if tt.status != 0 {
				if err == nil {
					ws.CloseNow()
				}
				if resp == nil || resp.StatusCode != tt.status {
					t.Fatalf("dial: %v, want %d", err, tt.status)
				}
				return
			}
			if err != nil {
				t.Fatalf("dial: %v", err)
			}
			defer ws.CloseNow()
			if got := ws.Subprotocol(); got != tt.chosen {
				t.Fatalf("subprotocol %q, want %q", got, tt.chosen)
			}
			if tt.ts == authed {
				testkit.JSONEqual(t, `{"jsonrpc":"2.0","result":"alice","id":1}`, roundTrip(t, ws, `{"jsonrpc":"2.0","method":"whoami","id":1}`))
			}
			ws.Close(websocket.StatusNormalClosure, "")
		})
	}
}

// A browser cannot set an Authorization header on a WebSocket; it sends
// its token as a subprotocol, base64url-encoded, next to "switchboard".
func ExampleBearerToken() {
	r := httptest.NewRequest("GET", "/rpc", nil)
	r.Header.Set("Sec-WebSocket-Protocol", "switchboard, switchboard.bearer."+base64.RawURLEncoding.EncodeToString([]byte("s3cret")))
	fmt.Println(server.BearerToken(r))

	r = httptest.NewRequest("GET", "/rpc?token=s3cret", nil)
	r.Header.Set("Authorization", "Bearer t0ken") // the header comes first
	fmt.Println(server.BearerToken(r))
	// Output:
	// s3cret
	// t0ken
}
