package testkit

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// Post sends body, a JSON-RPC request or batch, to endpoint (the whole
// URL: http://host:port/rpc) over HTTP POST, as a backend in any language
// would, with token as its bearer token unless it is empty, and returns
// the status and the body of the answer, whatever the status. A failure
// to send or to read the answer fails the test.
func Post(t testing.TB, ctx context.Context, endpoint, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %.200s: %v", body, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("POST %.200s: reading the reply: %v", body, err)
	}
	return resp.StatusCode, string(b)
}
