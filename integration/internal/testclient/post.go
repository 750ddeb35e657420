package testclient

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// Post sends body, a JSON-RPC request or batch, to the hub at base URL
// url (http://host:port) over HTTP POST, as a backend in any language
// would, with token as its bearer token unless it is empty, and returns
// the reply without its final newline. A failure, or a status other than
// 200, fails the test.
func Post(t testing.TB, ctx context.Context, url, token, body string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/rpc", strings.NewReader(body))
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
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %.200s: %s %s", body, resp.Status, b)
	}
	return strings.TrimSpace(string(b))
}
