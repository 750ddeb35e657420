package browser_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/switchboard-rpc/switchboard/client"
	"github.com/switchboard-rpc/switchboard/integration/internal/hubproc"
	"github.com/switchboard-rpc/switchboard/integration/internal/testclient"
)

// TestCallAPage: one page calls another by its peer id and by its user;
// the page is called by a Go service and by an HTTP POST from the test.
// The pages authenticate with tokens (alice's and bob's), which the hub
// names token-1 and token-2.
func TestCallAPage(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("alice-secret\nbob-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := hubproc.Start(t, &hubproc.Options{Args: []string{"-demo", "-origins", "127.0.0.1:*", "-token-file", tokens}})
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, clientPage, h.URL(), h.WebSocketURL())
	}))
	t.Cleanup(page.Close)
	open := func() *tab {
		tb := newTab(t)
		tb.do(chromedp.Navigate(page.URL))
		if !eval[bool](tb, `typeof window.sb === "object"`) {
			t.Fatal("switchboard.js did not load")
		}
		return tb
	}

	// alice's page answers confirm, and knows its own id.
	alice := open()
	aliceID := eval[string](alice, `(async () => {
		window.client = await sb.connect(hub, { token: "alice-secret" });
		client.register("confirm", ({ amount }) => "alice confirms " + amount);
		return (await client.whoami()).id;
	})()`)
	if aliceID == "" {
		t.Fatal("no id from whoami")
	}

	// bob's page calls alice's, by id and by user.
	bob := open()
	type answer struct {
		ByID   string
		ByUser []struct {
			Peer   struct{ ID, User string }
			Result string
		}
		Missing struct {
			Code int
			Is   bool
		}
	}
	got := eval[answer](bob, fmt.Sprintf(`(async () => {
		const client = await sb.connect(hub, { token: "bob-secret" });
		const byID = await client.callPeer(%q, "confirm", { amount: 5 }, { timeout: 10000 });
		const byUser = await client.callUser("token-1", "confirm", { amount: 6 });
		const missing = await client.callPeer("no-such-peer", "confirm").catch((e) => e);
		client.close();
		return { byID, byUser, missing: { code: missing.code, is: missing instanceof sb.RPCError } };
	})()`, aliceID))
	if got.ByID != "alice confirms 5" {
		t.Errorf("by id: %q", got.ByID)
	}
	if len(got.ByUser) != 1 || got.ByUser[0].Peer.ID != aliceID || got.ByUser[0].Peer.User != "token-1" || got.ByUser[0].Result != "alice confirms 6" {
		t.Errorf("by user: %+v", got.ByUser)
	}
	if got.Missing.Code != -32007 || !got.Missing.Is {
		t.Errorf("no such peer: %+v", got.Missing)
	}

	// A Go service calls the page.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	svc, err := client.Dial(ctx, h.WebSocketURL(), &client.Options{Token: "bob-secret"})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	var s string
	if err := svc.CallPeer(ctx, aliceID, "confirm", map[string]int{"amount": 7}, &s); err != nil || s != "alice confirms 7" {
		t.Fatalf("the Go service: %q, %v", s, err)
	}

	// So does a POST, as a backend in any language would.
	body := testclient.Post(t, ctx, h.URL(), "bob-secret",
		`{"jsonrpc":"2.0","method":"rpc.call","params":{"peer":"`+aliceID+`","method":"confirm","params":{"amount":8}},"id":"pay-8"}`)
	if want := `{"jsonrpc":"2.0","id":"pay-8","result":"alice confirms 8"}`; body != want {
		t.Fatalf("POST: %s\nwant %s", body, want)
	}
}
