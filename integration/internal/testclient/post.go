package testclient

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

// Post sends body, a JSON-RPC request or batch, to the hub at base URL
// url (http://host:port) over HTTP POST, as a backend in any language
// would, with token as its bearer token unless it is empty, and returns
// the reply without its final newline. A failure, or a status other than
// 200, fails the test; [testkit.Post] returns the status instead.
func Post(t testing.TB, ctx context.Context, url, token, body string) string {
	t.Helper()
	status, reply := testkit.Post(t, ctx, url+"/rpc", token, body)
	if status != http.StatusOK {
		t.Fatalf("POST %.200s: %d %s", body, status, reply)
	}
	return strings.TrimSpace(reply)
}
