// Package adminpage_test drives the hub's admin page (/admin/ on the admin
// listener) in a real headless Chromium against a real hub process: it
// lists a peer that connects with its topic, shows a refused request among
// the last refusals, charts the calls per second, ranks the topics by
// their events per second, kicks the peer (it sees the close code), and
// updates all of that without a reload.
//
// SWITCHBOARD_SCREENSHOTS=dir saves screenshots of the page there (make
// screenshots writes docs/img).
package adminpage_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"
	"github.com/switchboard-rpc/switchboard/integration/internal/chrome"
	"github.com/switchboard-rpc/switchboard/integration/internal/hubproc"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

var browser context.Context

func TestMain(m *testing.M) { os.Exit(chrome.Main(m, "integration/adminpage", &browser)) }

const opToken = "the-operators-token-for-the-page-test"

func TestAdminPage(t *testing.T) {
	dir := t.TempDir()
	tokens := testkit.WriteFile(t, filepath.Join(dir, "tokens"), []byte(opToken+"\n"))
	h := hubproc.Start(t, &hubproc.Options{Args: []string{"-demo", "-token-file", tokens, "-log-level", "warn"}, Admin: true})

	ctx, cancel := chromedp.NewContext(browser)
	defer cancel()
	if err := chromedp.Do(ctx); err != nil { // opens the tab, for the life of ctx
		t.Fatal(err)
	}
	run := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		actx, acancel := context.WithTimeout(ctx, 30*time.Second)
		defer acancel()
		if err := chromedp.Do(actx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	wait := func(what, js string) {
		t.Helper()
		actx, acancel := context.WithTimeout(ctx, testkit.Wait)
		defer acancel()
		if _, err := chromedp.Run(actx, chromedp.Poll[bool](js, chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
	}
	eval := func(js string) string {
		t.Helper()
		actx, acancel := context.WithTimeout(ctx, 30*time.Second)
		defer acancel()
		v, err := chromedp.Run(actx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return v
	}

	run("open the page", chromedp.Navigate(h.AdminURL()+"/admin/"))
	run("log in", chromedp.SendKeys(chromedp.CSS("#token"), opToken), chromedp.Click(chromedp.CSS("#connect")))
	wait("the page live", `document.getElementById("status").textContent === "live"`)
	wait("the page's own connection counted", `document.getElementById("conns").textContent === "1"`)

	// A peer connects and subscribes to news.
	wctx, wcancel := context.WithTimeout(t.Context(), testkit.Wait)
	defer wcancel()
	ws, _, err := websocket.Dial(wctx, h.WebSocketURL(), &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + opToken}}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	id := whoami(t, wctx, ws)
	if reply := roundTrip(t, wctx, ws, `{"jsonrpc":"2.0","method":"rpc.subscribe","params":["news"],"id":2}`); !strings.Contains(reply, `"result"`) {
		t.Fatalf("subscribe: %s", reply)
	}
	row := fmt.Sprintf(`document.querySelector('tr[data-peer=%q]')`, id)
	wait("the peer listed with its topic", row+` !== null && `+row+`.textContent.includes("news")`)
	wait("two connections counted", `document.getElementById("conns").textContent === "2"`)
	wait("the topic listed", `[...document.querySelectorAll("#topics td")].some((td) => td.textContent === "news")`)
	marker := eval(`window.stillTheSamePage = "yes"; window.stillTheSamePage`)

	// A request with a bad token is refused: the page lists the refusal.
	if status, reply := testkit.Post(t, wctx, h.URL()+"/rpc", "not-the-token", `{"jsonrpc":"2.0","method":"echo","params":["x"],"id":1}`); status != http.StatusUnauthorized {
		t.Fatalf("a bad token: %d %s, want 401", status, reply)
	}
	wait("the refusal listed", `[...document.querySelectorAll('#refusals tr[data-kind="auth"]')].some((tr) => tr.textContent.includes("POST /rpc") && tr.textContent.includes("401"))`)

	// A hundred calls: the calls per second chart rises.
	batch := strings.TrimSuffix(strings.Repeat(`{"jsonrpc":"2.0","method":"echo","params":["x"],"id":1},`, 100), ",")
	if status, reply := testkit.Post(t, wctx, h.URL()+"/rpc", opToken, "["+batch+"]"); status != http.StatusOK {
		t.Fatalf("a batch of calls: %d %s", status, reply)
	}
	wait("the calls per second charted", `parseFloat(document.getElementById("calls").textContent) >= 20`)

	// Topics are ranked by their events per second: a burst on zulu puts
	// it first, then one on alpha puts alpha first.
	broadcast := func(n int, topic string) {
		t.Helper()
		topics := strings.TrimSuffix(strings.Repeat(fmt.Sprintf("%q,", topic), n), ",")
		body := `{"jsonrpc":"2.0","method":"admin.broadcast","params":{"topics":[` + topics + `],"data":1},"id":1}`
		if status, reply := testkit.Post(t, wctx, h.AdminURL()+"/rpc", opToken, body); status != http.StatusOK || !strings.Contains(reply, `"result"`) {
			t.Fatalf("admin.broadcast on %s: %d %s", topic, status, reply)
		}
	}
	broadcast(1, "alpha")
	broadcast(1, "zulu")
	const first = `document.querySelector("#topics tbody tr").dataset.topic`
	wait("alpha and zulu listed", `document.querySelector('#topics tr[data-topic="alpha"]') !== null && document.querySelector('#topics tr[data-topic="zulu"]') !== null`)
	broadcast(20, "zulu")
	wait("zulu first, with its rate", first+` === "zulu" && parseFloat(document.querySelector('#topics tr[data-topic="zulu"] td.rate').textContent) > 0`)
	broadcast(20, "alpha")
	wait("alpha first", first+` === "alpha"`)
	screenshots(t, ctx)

	// Kick it from the page: its connection is closed with 4003, and the
	// page drops it without a reload.
	run("kick", chromedp.Click(chromedp.CSS(fmt.Sprintf(`tr[data-peer=%q] button.kick`, id))))
	_, _, err = ws.Read(wctx)
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != 4003 {
		t.Fatalf("the kicked peer's read: %v, want close 4003", err)
	}
	wait("the peer gone from the page", row+` === null`)
	wait("one connection counted", `document.getElementById("conns").textContent === "1"`)
	if got := eval(`window.stillTheSamePage`); got != marker {
		t.Fatal("the page was reloaded")
	}

	// At phone width nothing is wider than the screen.
	run("phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile))
	if w := eval(`String(document.documentElement.scrollWidth)`); w != "390" {
		t.Errorf("at phone width the page is %s px wide", w)
	}
}

func roundTrip(t *testing.T, ctx context.Context, ws *websocket.Conn, msg string) string {
	t.Helper()
	if err := ws.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
		t.Fatal(err)
	}
	_, b, err := ws.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func whoami(t *testing.T, ctx context.Context, ws *websocket.Conn) string {
	t.Helper()
	reply := roundTrip(t, ctx, ws, `{"jsonrpc":"2.0","method":"rpc.whoami","id":1}`)
	_, rest, ok := strings.Cut(reply, `"id":"`)
	id, _, ok2 := strings.Cut(rest, `"`)
	if !ok || !ok2 {
		t.Fatalf("rpc.whoami: %s", reply)
	}
	return id
}

// screenshots saves the whole page, light and dark, in
// $SWITCHBOARD_SCREENSHOTS.
func screenshots(t *testing.T, ctx context.Context) {
	dir := os.Getenv("SWITCHBOARD_SCREENSHOTS")
	if dir == "" {
		return
	}
	for _, scheme := range []string{"light", "dark"} {
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		height := int64(760)
		err := chromedp.Do(sctx, chromedp.EmulateViewport(1280, height))
		if err == nil {
			var h float64
			h, err = chromedp.Run(sctx, chromedp.Evaluate[float64](`document.documentElement.scrollHeight`))
			height = max(height, int64(h))
		}
		if err == nil {
			err = chromedp.Do(sctx, chromedp.EmulateViewport(1280, height), chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
				_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
					Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}},
				})
				return err
			}))
		}
		var png []byte
		if err == nil {
			png, err = chromedp.Run(sctx, chromedp.CaptureScreenshot())
		}
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		name := "admin-" + scheme + ".png"
		if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("saved %s", filepath.Join(dir, name))
	}
}
