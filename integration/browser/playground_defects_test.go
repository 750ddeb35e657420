package browser_test

import (
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/switchboard-rpc/switchboard/integration/internal/hubproc"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

// openPage opens the playground of the hub at base, with query, and waits
// for its first state.
func openPage(t *testing.T, base, query string) *tab {
	t.Helper()
	tb := newTab(t)
	tb.do(chromedp.EmulateViewport(1280, 900), chromedp.Navigate(base+"/"+query))
	return tb
}

// Pointed with ?hub= at another hub that does not allow its origin, the
// page says so, and names the flag that would; a hub that is down is
// said to be unreachable; one started with that flag lets the page in.
func TestPlaygroundOtherHubRefusesOrigin(t *testing.T) {
	home := hubproc.Start(t, &hubproc.Options{Args: []string{"-demo"}})
	other := hubproc.Start(t, &hubproc.Options{Args: []string{"-demo"}})
	tb := openPage(t, home.URL(), "?hub="+url.QueryEscape(other.WebSocketURL()))
	tb.waitText("#banner-text", "does not allow pages from "+home.URL())
	tb.waitText("#banner-text", "-origins "+home.Addr())

	if err := other.Stop(); err != nil {
		t.Fatal(err)
	}
	down := openPage(t, home.URL(), "?hub="+url.QueryEscape(other.WebSocketURL()))
	down.waitTrue("the page to look into why", `document.querySelector("#banner").dataset.diagnosed !== undefined`)
	if got := down.text("#banner-text"); !strings.Contains(got, "the hub cannot be reached") {
		t.Errorf("a hub that is down: %q", got)
	}

	allowing := hubproc.Start(t, &hubproc.Options{Args: []string{"-demo", "-origins", home.Addr()}})
	ok := openPage(t, home.URL(), "?hub="+url.QueryEscape(allowing.WebSocketURL()))
	ok.waitText("#conn-text", "connected")
}

// A call from another peer that waits for an answer does not take the
// keyboard: what the user types goes on into the field they were in.
func TestPlaygroundPeerCallKeepsFocus(t *testing.T) {
	a, h := openPlayground(t, 1280, 900)
	b := openSecondPlayground(t, h.URL())
	a.do(chromedp.Click(chromedp.CSS("#whoami")))
	a.waitText("#me", "This page is peer ")
	id := eval[string](a, `document.querySelector("#me").textContent.match(/peer ([0-9a-f-]+)/)[1]`)

	a.do(typeInto("#params", "[1, "))
	b.do(
		typeInto("#method", "rpc.call"),
		typeInto("#params", `{"peer": "`+id+`", "method": "confirm", "params": {"question": "Ship it?"}}`),
		chromedp.Click(chromedp.CSS("#call")),
	)
	a.waitText("#incoming .entry:first-child .badge", "waiting for you")
	a.do(chromedp.KeyEvent("2]"))
	if got := eval[string](a, `document.activeElement.id + " " + document.querySelector("#params").value`); got != "params [1, 2]" {
		t.Errorf("the keyboard went elsewhere: focus and params are %q", got)
	}
	if got := eval[string](a, `document.querySelector("#incoming .entry:first-child textarea").value`); got != "true" {
		t.Errorf("the answer box got %q", got)
	}
	a.do(chromedp.Click(chromedp.CSS("#incoming .entry:first-child button.primary")))
	b.waitText("#calls .entry:first-child pre.result", "true")
}

// After the header's Reconnect, the Peers panel shows the page under its
// new peer id, marked "you".
func TestPlaygroundReconnectButton(t *testing.T) {
	a, _ := openPlayground(t, 1280, 900)
	a.do(chromedp.Click(chromedp.CSS("#presence-form button")), chromedp.Click(chromedp.CSS("#whoami")))
	a.waitText("#peers .peer .badge", "you")
	before := eval[string](a, `document.querySelector("#peers .peer code").textContent`)
	a.do(chromedp.Click(chromedp.CSS("#reconnect")))
	a.waitTrue("the Peers panel to list this page, as you, under a new id", `(() => {
  const ps = document.querySelectorAll("#peers .peer");
  return ps.length === 1 && ps[0].querySelector(".badge")?.textContent === "you" && ps[0].querySelector("code").textContent !== `+"`"+before+"`"+`;
})()`)
	if me := a.text("#me"); strings.Contains(me, before) {
		t.Errorf("after Reconnect the page still says: %s", me)
	}
}

// The Calls card's Clear empties it.
func TestPlaygroundClearCalls(t *testing.T) {
	a, _ := openPlayground(t, 1280, 900)
	a.do(typeInto("#method", "add"), typeInto("#params", "[1, 2]"), chromedp.Click(chromedp.CSS("#call")))
	a.waitText("#calls .entry:first-child .badge", "result")
	a.do(chromedp.Click(chromedp.CSS("#clear-calls")))
	a.waitTrue("the Calls card to be empty", `document.querySelectorAll("#calls .entry").length === 0`)
}

// A token typed in the page is kept across a reload only when asked, and
// the page says so, with a Forget button; without asking, the form says
// it is not kept.
func TestPlaygroundTokenKept(t *testing.T) {
	file := testkit.WriteFile(t, filepath.Join(t.TempDir(), "tokens"), []byte("s3cret\n"))
	h := hubproc.Start(t, &hubproc.Options{Args: []string{"-demo", "-token-file", file}})
	tb := openPage(t, h.URL(), "")
	tb.do(chromedp.WaitVisible(chromedp.CSS("#token-form")))
	tb.waitText("#token-form", "Unless kept, a token is forgotten when the page reloads")
	tb.do(chromedp.Click(chromedp.CSS("#keep-token")), chromedp.SendKeys(chromedp.CSS("#token"), "s3cret\n"))
	tb.waitText("#conn-text", "connected")
	tb.do(chromedp.WaitVisible(chromedp.CSS("#token-kept")))

	tb.do(chromedp.Reload())
	tb.waitText("#conn-text", "connected")
	tb.do(chromedp.WaitVisible(chromedp.CSS("#token-kept")), chromedp.Click(chromedp.CSS("#forget-token")))
	tb.do(chromedp.WaitNotVisible(chromedp.CSS("#token-kept")))
	tb.do(chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#token-form")))
	tb.waitText("#banner-text", "HTTP 401")
}

// The connection panel reads a JSON Web Token typed into it: whom it is
// for, and when it expires.
func TestPlaygroundTokenPanelReadsJWT(t *testing.T) {
	tb, _ := openPlayground(t, 1280, 900)
	tb.do(chromedp.Click(chromedp.CSS("#conn-toggle")), chromedp.WaitVisible(chromedp.CSS("#token")))
	// {"alg":"HS256"}.{"sub":"alice","exp":<in an hour>}.signature
	jwt := eval[string](tb, `["{\"alg\":\"HS256\"}", JSON.stringify({ sub: "alice", exp: Math.floor(Date.now() / 1000) + 3600 })].map((p) => btoa(p).replace(/=+$/, "")).join(".") + ".sig"`)
	tb.do(chromedp.SendKeys(chromedp.CSS("#token"), jwt))
	tb.waitText("#token-info", "A JSON Web Token for alice, expiring in 60 min")
}
