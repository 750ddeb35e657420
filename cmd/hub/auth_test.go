package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

// writeTokens writes a token file of n random tokens and returns its path
// and the tokens.
func writeTokens(t *testing.T, n int) (string, []string) {
	t.Helper()
	var tokens []string
	for range n {
		tokens = append(tokens, rand.Text())
	}
	file := testkit.WriteFile(t, filepath.Join(t.TempDir(), "tokens"), []byte("# tokens\n"+strings.Join(tokens, "\n")+"\n"))
	return file, tokens
}

// TestTokensNeverLogged runs the hub with tokens and debug logs, sends
// tokens every way a client can, right and wrong, and then looks for them,
// plain and base64-encoded, in everything the hub wrote.
func TestTokensNeverLogged(t *testing.T) {
	file, tokens := writeTokens(t, 2)
	good, other, wrong := tokens[0], tokens[1], rand.Text()
	p := startProc(t, "-demo", "-token-file", file, "-log-level", "debug")
	addr := p.Addr(t, "hub listening")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	rpcURL := "http://" + addr + "/rpc"

	for _, tt := range []struct {
		name  string
		query string
		hdr   []string
		want  int
	}{
		{"no token", "", nil, 401},
		{"header", "", []string{"Authorization", "Bearer " + good}, 200},
		{"header, wrong", "", []string{"Authorization", "Bearer " + wrong}, 401},
		{"query", "?token=" + url.QueryEscape(other), nil, 200},
		{"query, wrong", "?token=" + url.QueryEscape(wrong), nil, 401},
	} {
		status, body, err := postAdd(ctx, http.DefaultClient, rpcURL+tt.query, tt.hdr...)
		if err != nil || status != tt.want {
			t.Errorf("POST, %s: %d %s %v, want %d", tt.name, status, body, err, tt.want)
		}
	}

	wsURL := "ws://" + addr + "/rpc"
	for _, tt := range []struct {
		name, query string
		opts        websocket.DialOptions
		want        int // 0: connected
	}{
		{"header", "", websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + good}}}, 0},
		{"header, wrong", "", websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + wrong}}}, 401},
		{"query", "?token=" + url.QueryEscape(good), websocket.DialOptions{}, 0},
		{"query, wrong", "?token=" + url.QueryEscape(wrong), websocket.DialOptions{}, 401},
		{"subprotocol", "", websocket.DialOptions{Subprotocols: []string{"switchboard", bearer(other)}}, 0},
		{"subprotocol, wrong", "", websocket.DialOptions{Subprotocols: []string{"switchboard", bearer(wrong)}}, 401},
		// A page elsewhere that got hold of a token still cannot use it
		// from its visitors' browsers (cross-site WebSocket hijacking).
		{"foreign origin", "?token=" + url.QueryEscape(good), websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"https://evil.example"}}}, 403},
		{"same origin", "?token=" + url.QueryEscape(good), websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"http://" + addr}}}, 0},
	} {
		ws, resp, err := websocket.Dial(ctx, wsURL+tt.query, &tt.opts)
		if tt.want != 0 {
			if err == nil {
				ws.CloseNow()
			}
			if resp == nil || resp.StatusCode != tt.want {
				t.Errorf("WebSocket, %s: %v, want %d", tt.name, err, tt.want)
			}
			continue
		}
		if err != nil {
			t.Errorf("WebSocket, %s: %v", tt.name, err)
			continue
		}
		// A call, so that the debug log has a message to show.
		if err := ws.Write(ctx, websocket.MessageText, []byte(`{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}`)); err != nil {
			t.Fatal(err)
		}
		if _, reply, err := ws.Read(ctx); err != nil || string(reply) != `{"jsonrpc":"2.0","id":1,"result":3}` {
			t.Errorf("WebSocket, %s: add = %s, %v", tt.name, reply, err)
		}
		ws.Close(websocket.StatusNormalClosure, "")
	}

	// An upgrade that fails after authentication, logged at Debug.
	req, _ := http.NewRequestWithContext(ctx, "GET", rpcURL+"?token="+url.QueryEscape(good), nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Protocol", "switchboard, "+bearer(good))
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 400 {
		t.Errorf("an upgrade without a key: %v, %v; want 400", resp, err)
	} else {
		resp.Body.Close()
	}

	log := p.Stop(t)
	for _, want := range []string{`"level":"debug"`, `"refused"`, `"peer connected"`, `"identity":"token-2"`, `"identity":"token-3"`} {
		if !strings.Contains(log, want) {
			t.Errorf("the log has no %s: the test does not see what it should", want)
		}
	}
	for _, tok := range []string{good, other, wrong} {
		for _, form := range []string{tok, url.QueryEscape(tok), base64.RawURLEncoding.EncodeToString([]byte(tok)), base64.StdEncoding.EncodeToString([]byte(tok))} {
			if strings.Contains(log, form) {
				t.Errorf("the log holds a token (%q):\n%s", form, log)
			}
		}
	}
}

func bearer(token string) string {
	return "switchboard.bearer." + base64.RawURLEncoding.EncodeToString([]byte(token))
}
