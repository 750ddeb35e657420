package server_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/server"
)

// The root answers JSON-RPC as /rpc does, but for plain GETs, which go to
// Options.Root (the playground, in cmd/hub).
func TestRoot(t *testing.T) {
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, "page "+r.URL.Path)
	})
	ts := newTestServer(t, &server.Options{Root: page})

	// A JSON-RPC tutorial's client, posting to the server's root.
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL, strings.NewReader(`{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}`))
	req.Header.Set("Content-Type", "application/json")
	status, body := do(t, req)
	if status != 200 {
		t.Fatalf("POST /: %d %s", status, body)
	}
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","result":19,"id":1}`, body)

	// The same rules as /rpc: content type, methods.
	req, _ = http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL+"/", strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "text/plain")
	if status, _ := do(t, req); status != http.StatusUnsupportedMediaType {
		t.Errorf("POST / text/plain: %d, want 415", status)
	}
	req, _ = http.NewRequestWithContext(t.Context(), http.MethodPut, ts.URL+"/", nil)
	if status, _ := do(t, req); status != http.StatusMethodNotAllowed {
		t.Errorf("PUT /: %d, want 405", status)
	}

	// A WebSocket at the root is a peer like one at /rpc.
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Wait)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(ts.URL, "http")+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","result":3,"id":"a"}`, roundTrip(t, ws, `{"jsonrpc":"2.0","method":"add","params":[1,2],"id":"a"}`))
	ws.Close(websocket.StatusNormalClosure, "")

	// Plain GETs go to Root: the root and other paths.
	for _, path := range []string{"/", "/playground.css"} {
		req, _ = http.NewRequestWithContext(t.Context(), http.MethodGet, ts.URL+path, nil)
		if status, body := do(t, req); status != 200 || body != "page "+path {
			t.Errorf("GET %s: %d %q", path, status, body)
		}
	}
	// The server's own paths stay its own.
	req, _ = http.NewRequestWithContext(t.Context(), http.MethodGet, ts.URL+"/healthz", nil)
	if status, body := do(t, req); status != 200 || body != "ok\n" {
		t.Errorf("GET /healthz: %d %q", status, body)
	}
}

func TestRootWithoutPage(t *testing.T) {
	ts := newTestServer(t, nil)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, ts.URL+"/", nil)
	if status, body := do(t, req); status != http.StatusUpgradeRequired || !strings.HasPrefix(body, "/ speaks JSON-RPC 2.0") {
		t.Errorf("GET /: %d %q, want 426 and how to connect", status, body)
	}
	req, _ = http.NewRequestWithContext(t.Context(), http.MethodGet, ts.URL+"/index.html", nil)
	if status, _ := do(t, req); status != http.StatusNotFound {
		t.Errorf("GET /index.html: %d, want 404", status)
	}
	req, _ = http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL, strings.NewReader(`{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}`))
	req.Header.Set("Content-Type", "application/json")
	if status, body := do(t, req); status != 200 || !strings.Contains(body, `"result":3`) {
		t.Errorf("POST /: %d %s", status, body)
	}
}

func do(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	resp, b := doRequest(t, req)
	return resp.StatusCode, string(b)
}
