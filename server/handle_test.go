package server_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/peer"
	"github.com/switchboard-rpc/switchboard/server"
)

// Handle serves another protocol behind /rpc's checks, with the identity
// in the context; Guard leaves its authentication to the server, so an
// anonymous caller passes where /rpc lets one in.
func TestHandle(t *testing.T) {
	auth := func(r *http.Request) (any, error) {
		switch server.BearerToken(r) {
		case "":
			return nil, nil // anonymous callers allowed
		case "good":
			return "alice", nil
		}
		return nil, server.ErrUnauthorized
	}
	srv := server.New(&server.Options{Authenticate: auth, Conn: peer.Options{MaxMessage: 64}})
	srv.Handle("/x", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		io.WriteString(w, "identity="+userOf(hub.Identity(r.Context()))+" body="+string(body))
	}))
	ts := httptest.NewServer(srv.Guard(srv, nil))
	defer ts.Close()

	for _, tc := range []struct {
		token, origin, body string
		want                int
		text                string
	}{
		{"good", "", "hi", http.StatusOK, "identity=alice body=hi"},
		{"", "", "hi", http.StatusOK, "identity= body=hi"},
		{"bad", "", "hi", http.StatusUnauthorized, ""},
		{"good", "https://evil.example", "hi", http.StatusForbidden, ""},
		{"good", "", strings.Repeat("x", 65), http.StatusRequestEntityTooLarge, ""},
	} {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/x", strings.NewReader(tc.body))
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
		}
		resp, b := doRequest(t, req)
		if resp.StatusCode != tc.want || tc.text != "" && string(b) != tc.text {
			t.Errorf("token %q origin %q: %d %q, want %d %q", tc.token, tc.origin, resp.StatusCode, b, tc.want, tc.text)
		}
	}

	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(ts.URL+"/x", "text/plain", strings.NewReader("late"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("while shutting down: %s, want 503", resp.Status)
	}
}

func userOf(identity any) string {
	s, _ := identity.(string)
	return s
}

// Callable says what a caller may call, as a POST caller's call would be
// decided.
func TestCallable(t *testing.T) {
	mux := peer.NewMux()
	mux.Handle("open", peer.Func(func(context.Context, struct{}) (int, error) { return 1, nil }))
	mux.Handle("closed", peer.Func(func(context.Context, struct{}) (int, error) { return 1, nil }))
	srv := server.New(&server.Options{Router: mux, Authorize: func(_ context.Context, method string) error {
		if method == "closed" {
			return &peer.Error{Code: peer.CodeUnauthorized, Message: "no"}
		}
		return nil
	}})
	ctx := context.Background()
	for method, want := range map[string]peer.Code{"open": 0, "closed": peer.CodeUnauthorized, "nobody.serves": peer.CodeMethodNotFound, "rpc.discover": peer.CodeMethodNotFound} {
		err := srv.Callable(ctx, method)
		var code peer.Code
		if e, ok := err.(*peer.Error); ok {
			code = e.Code
		} else if err != nil {
			code = -1
		}
		if code != want {
			t.Errorf("Callable(%s) = %v, want code %d", method, err, want)
		}
	}
}
