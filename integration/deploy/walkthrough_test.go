package deploy_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/golang-jwt/jwt/v5"
	"github.com/switchboard-rpc/switchboard/integration/internal/hubproc"
	"github.com/switchboard-rpc/switchboard/integration/internal/testclient"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

// exampleConfig is the config file the walk-through deploys.
const exampleConfig = "../../docs/hub.example.yaml"

var secret = []byte("the walk-through's HMAC secret, 32 bytes or more")

// token is what the login system issues: a JWT for sub, with the
// audience the example config requires, expiring after ttl.
func token(t *testing.T, sub string, ttl time.Duration, extra jwt.MapClaims) string {
	claims := jwt.MapClaims{"aud": "switchboard"}
	maps.Copy(claims, extra)
	return testkit.HS256(t, secret, sub, ttl, claims)
}

// appPage is the web app, served by the login system's origin: it imports
// switchboard.js from the hub.
const appPage = `<!doctype html>
<title>app</title>
<script type="module">
window.sb = await import("%[1]s/switchboard.js");
window.hub = "%[2]s";
</script>`

// openPage opens a tab on the app's page.
func openPage(t *testing.T, app string) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil { // opens the tab, for as long as ctx lasts
		t.Fatal(err)
	}
	do(t, ctx, chromedp.Navigate(app+"/app"))
	eval[bool](t, ctx, `new Promise((resolve) => { const f = () => window.sb ? resolve(true) : setTimeout(f, 20); f(); })`)
	return ctx
}

func do(t *testing.T, ctx context.Context, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatal(err)
	}
}

// eval evaluates a JavaScript expression in the tab, awaiting a Promise,
// within 30 seconds.
func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("%v\nin: %s", err, js)
	}
	return v
}

func TestWalkThrough(t *testing.T) {
	dir := t.TempDir()
	keyFile := testkit.WriteFile(t, filepath.Join(dir, "hub.key"), secret)
	// The hub: only -config (and the -addr the harness picks). The
	// environment overrides the file: where the key file is, and the
	// app's origin (a port chosen by the test).
	h := hubproc.Start(t, &hubproc.Options{
		Args: []string{"-config", exampleConfig},
		Env:  []string{"SWITCHBOARD_JWT_KEY=" + keyFile, "SWITCHBOARD_ORIGINS=127.0.0.1:*"},
	})
	// The web app and its login system: the page, and alice's tokens for
	// it, 5 s each.
	issued := make(chan string, 1000)
	login := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/app" {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprintf(w, appPage, h.URL(), h.WebSocketURL())
			return
		}
		ttl, _ := strconv.Atoi(r.URL.Query().Get("ttl"))
		tok := token(t, r.URL.Query().Get("sub"), time.Duration(ttl)*time.Second, nil)
		issued <- tok
		_, _ = io.WriteString(w, tok)
	}))
	defer login.Close()
	backend := token(t, "orders", time.Hour, jwt.MapClaims{"role": "backend"})

	// 2. alice's page connects with a token function and subscribes to
	// her inbox.
	alice := openPage(t, login.URL)
	eval[bool](t, alice, `(async () => {
  window.events = [];
  window.states = [];
  window.refreshErrors = [];
  window.tokens = 0;
  window.alice = await sb.connect(hub, { token: async () => { tokens++; return (await fetch("/token?sub=alice&ttl=5")).text(); } });
  alice.addEventListener("state", (e) => states.push(e.state));
  alice.addEventListener("error", (e) => { e.preventDefault(); refreshErrors.push(e.context + ": " + e.error.message); });
  await alice.subscribe("user.alice.inbox", (e) => events.push(e.data?.n ?? "missed"));
  return true;
})()`)
	firstExp := time.Now().Add(5 * time.Second)

	// 1. The backend publishes to alice's inbox over HTTP POST.
	publish := func(n int) {
		t.Helper()
		reply := testclient.Post(t, t.Context(), h.URL(), backend, fmt.Sprintf(`{"jsonrpc":"2.0","method":"rpc.publish","params":{"topic":"user.alice.inbox","data":{"n":%d}},"id":%d}`, n, n))
		if !strings.Contains(reply, `"delivered":1`) {
			t.Fatalf("publish %d: %s", n, reply)
		}
	}
	publish(0)
	got := eval[int](t, alice, `new Promise((resolve) => { const f = () => events.length > 0 ? resolve(events[0]) : setTimeout(f, 20); f(); })`)
	if got != 0 {
		t.Fatalf("alice received %d, want 0", got)
	}

	// 2. Bob's inbox is refused with -32001, and the page stays connected.
	refused := eval[string](t, alice, `alice.subscribe("user.bob.inbox", () => {}).then(() => "subscribed", (e) => e.code + " " + alice.state)`)
	if refused != "-32001 open" {
		t.Errorf("subscribing to user.bob.inbox: %s, want -32001 and still open", refused)
	}
	// A call the rules allow users, and one they do not.
	if sum := eval[float64](t, alice, `alice.call("add", [2, 3])`); sum != 5 {
		t.Errorf("add = %v", sum)
	}
	if code := eval[int](t, alice, `alice.call("echo", [1]).then(() => 0, (e) => e.code)`); code != -32001 {
		t.Errorf("echo by a user: %d, want -32001", code)
	}

	// 3. The page answers confirm; the backend reaches it by alice's user
	// name with rpc.call over POST, and gets her page's answer.
	eval[bool](t, alice, `(alice.register("confirm", (params) => ({ confirmed: params.amount, by: "alice's tab" })), true)`)
	reply := testclient.Post(t, t.Context(), h.URL(), backend, `{"jsonrpc":"2.0","method":"rpc.call","params":{"user":"alice","method":"confirm","params":{"amount":42}},"id":"pay-1"}`)
	if !strings.Contains(reply, `"id":"pay-1"`) || !strings.Contains(reply, `"user":"alice"`) ||
		!strings.Contains(reply, `"result":{"confirmed":42,"by":"alice's tab"}`) {
		t.Errorf("rpc.call to alice: %s", reply)
	}
	t.Logf("rpc.call to alice: %s", reply)
	// A user may not address others: the rules keep address for backends.
	if code := eval[int](t, alice, `alice.callUser("orders", "confirm", {}).then(() => 0, (e) => e.code)`); code != -32001 {
		t.Errorf("alice addressing a user: %d, want -32001", code)
	}

	// 4. A second page, whose token expires and is not refreshed: closed
	// with 4001, and it says why.
	bob := openPage(t, login.URL)
	eval[bool](t, bob, fmt.Sprintf(`(async () => {
  window.bob = await sb.connect(hub, { token: %q, maxAttempts: 0 });
  window.ended = new Promise((resolve) => bob.addEventListener("state", (e) => { if (e.state === "closed") resolve(e); }));
  return true;
})()`, token(t, "bob", 3*time.Second, nil)))

	// Alice's token expires in 5 s; events keep coming meanwhile, until
	// both the first token's exp has passed and the page has refreshed.
	n := 1
	for time.Now().Before(firstExp.Add(time.Second)) || eval[int](t, alice, `tokens`) < 2 {
		publish(n)
		n++
		if n > 1000 {
			t.Fatal("the page never refreshed its token")
		}
		time.Sleep(100 * time.Millisecond) // a steady stream, not a wait for something
	}
	received := eval[[]int](t, alice, fmt.Sprintf(`new Promise((resolve) => { const f = () => events.length >= %d ? resolve(events) : setTimeout(f, 20); f(); })`, n))
	for i, v := range received {
		if v != i {
			t.Fatalf("alice's events %v: event %d is %d; lost or out of order", received, i, v)
		}
	}
	if states := eval[[]string](t, alice, `states`); len(states) != 0 {
		t.Errorf("alice's connection changed state: %v", states)
	}
	if errs := eval[[]string](t, alice, `refreshErrors`); len(errs) != 0 {
		t.Errorf("refresh errors: %v", errs)
	}
	t.Logf("alice received %d events across %d tokens", len(received), len(issued))

	why := eval[string](t, bob, `ended.then((e) => e.error.closeCode + " " + e.error.closeReason + " | " + e.error.message)`)
	if !strings.HasPrefix(why, "4001 token expired | ") || !strings.Contains(why, "token expired") {
		t.Errorf("bob's page closed with %q, want 4001 token expired", why)
	}

	// 5. check-config rejects the same file with a typo in one key.
	data, err := os.ReadFile(exampleConfig)
	if err != nil {
		t.Fatal(err)
	}
	typo := testkit.WriteFile(t, filepath.Join(dir, "typo.yaml"), bytes.Replace(data, []byte("jwt-audience:"), []byte("jwt-audince:"), 1))
	bin, err := hubproc.Binary()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "check-config", typo)
	cmd.Env = append(os.Environ(), "SWITCHBOARD_JWT_KEY="+keyFile)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), `unknown key "jwt-audince" (did you mean "jwt-audience"?)`) {
		t.Errorf("check-config of a typo: %v\n%s", err, out)
	}
	cmd = exec.Command(bin, "check-config", exampleConfig)
	cmd.Env = append(os.Environ(), "SWITCHBOARD_JWT_KEY="+keyFile)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "who: role=backend") {
		t.Errorf("check-config of the example: %v\n%s", err, out)
	}
}
