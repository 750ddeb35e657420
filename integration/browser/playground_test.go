package browser_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/switchboard-rpc/switchboard/integration/internal/hubproc"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

// openPlayground starts a demo hub and opens its playground at width x
// height, once it is connected and knows the hub's methods.
func openPlayground(t *testing.T, width, height int64) (*tab, *hubproc.Hub) {
	t.Helper()
	h := hubproc.Start(t, &hubproc.Options{Args: []string{"-demo"}})
	tb := newTab(t)
	tb.do(
		chromedp.EmulateViewport(width, height),
		chromedp.Navigate(h.URL()+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="open"]`)),
		chromedp.WaitReady(chromedp.CSS(`#methods option[value="subtract"]`)),
	)
	return tb, h
}

// typeInto replaces the value of the field sel with text, typed key by key.
func typeInto(sel, text string) chromedp.Action[chromedp.Void] {
	clear := chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelector(%q).value = ""`, sel))
	if text == "" {
		return clear
	}
	return chromedp.Steps(clear, chromedp.SendKeys(chromedp.CSS(sel), text))
}

// serveReply fills the playground's Serve form: the method name, answered
// with reply (JSON).
func serveReply(name, reply string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(
		typeInto("#serve-name", name),
		chromedp.SetValue(chromedp.CSS("#serve-mode"), "reply"),
		chromedp.Evaluate[chromedp.Void](`document.querySelector("#serve-mode").dispatchEvent(new Event("change"))`),
		chromedp.SetValue(chromedp.CSS("#serve-reply"), reply),
	)
}

func TestPlayground(t *testing.T) {
	tb, h := openPlayground(t, 1280, 900)

	// Pick a method: its signature shows and the params are templated.
	tb.do(typeInto("#method", "subtract"))
	tb.waitText("#method-info", "subtract(minuend: number, subtrahend: number) → number")
	if got := eval[string](tb, `document.querySelector("#params").value`); got != `{"minuend":0,"subtrahend":0}` {
		t.Errorf("params template: %s", got)
	}
	// Enter in the params box sends the call; the reply shows.
	tb.do(typeInto("#params", "[42, 23]"), chromedp.KeyEvent("\r"))
	tb.waitText("#calls .entry:first-child .badge", "result")
	if got := tb.text("#calls .entry:first-child pre.result"); got != "19" {
		t.Errorf("subtract's result shows %q", got)
	}
	tb.waitText("#frames .frame.send .summary", "subtract #")
	tb.waitText("#frames .frame.receive .kind", "result")

	// Malformed params are caught before sending, with a pointer to Raw.
	tb.do(typeInto("#params", "[42,"), chromedp.Click(chromedp.CSS("#call")))
	tb.waitText("#params-error", "Raw JSON")

	// A slow call can be cancelled from its entry.
	tb.do(typeInto("#method", "sleep"), typeInto("#params", `{"ms": 60000}`), chromedp.Click(chromedp.CSS("#call")))
	tb.waitText("#calls .entry:first-child .progress-text", `progress: {"slept"`)
	tb.do(chromedp.Click(chromedp.CSS("#calls .entry:first-child button.danger")))
	tb.waitText("#calls .entry:first-child .badge", "cancelled")
	tb.waitText("#frames .frame.send .kind", "cancel")

	// A batch of two.
	tb.do(
		typeInto("#method", "add"), typeInto("#params", "[1, 2]"), chromedp.Click(chromedp.CSS("#add-batch")),
		typeInto("#method", "get_data"), typeInto("#params", ""), chromedp.Click(chromedp.CSS("#add-batch")),
		chromedp.Click(chromedp.CSS("#send-batch")),
	)
	tb.waitText("#calls .entry:first-child .badge", "2/2 ok")
	tb.waitText("#frames .frame.receive .kind", "batch of 2")

	// Subscribe, and see events published by another peer and by the page.
	tb.do(typeInto("#pattern", "chat.*"), chromedp.Click(chromedp.CSS("#subscribe-form button")))
	tb.do(chromedp.WaitVisible(chromedp.CSS("#subs .chip:not(.pending)")))
	publish(t, h.URL(), "chat.room1", `{"text":"hello from Go"}`)
	tb.waitText("#events .entry", "hello from Go")
	tb.do(chromedp.Click(chromedp.CSS("#publish-form button")))
	tb.waitText("#publish-result", "reached 1 peer")
	tb.waitText("#events .entry:first-child", `"text": "hello"`)

	// The hub calls the page back; the page's user answers.
	tb.do(chromedp.Click(chromedp.CSS(`[data-try*="confirm"]`)))
	tb.waitText("#incoming .entry:first-child .badge", "waiting for you")
	tb.do(
		chromedp.SetValue(chromedp.CSS("#incoming .entry:first-child textarea"), `"yes, ship it"`),
		chromedp.Click(chromedp.CSS("#incoming .entry:first-child button.primary")),
	)
	tb.waitText("#incoming .entry:first-child .badge", "you answered")
	tb.waitText("#calls .entry:first-child pre.result", `"yes, ship it"`)

	// Raw JSON: a specification example that is not even JSON.
	tb.do(
		chromedp.Click(chromedp.CSS("#tab-raw")),
		chromedp.Click(chromedp.Search(`//button[text()="invalid JSON"]`)),
		chromedp.Click(chromedp.CSS("#pane-raw button.primary")),
	)
	tb.waitText("#raw-reply", "-32700")
	tb.waitText("#frames .frame.send .kind", "not JSON")

	// History, presence and positions, for a screenshot of those panels.
	publish(t, h.URL(), "chat.room2", `{"text":"second"}`)
	tb.do(chromedp.Click(chromedp.CSS("#history-form button")), chromedp.Click(chromedp.CSS("#presence-form button")))
	tb.waitText("#history-result", "3 events of chat.>")
	tb.waitText("#presence-result", "1 peer on chat.room1")
	eval[bool](tb, `(document.querySelector("#history-title").scrollIntoView(), scrollBy(0, -70), true)`)
	tb.do(colorScheme("light"))
	tb.screenshot("playground-streams.png")

	// The frames so far, for the screenshots: the method tab, the top.
	tb.do(colorScheme("light"), chromedp.Click(chromedp.CSS("#tab-method")), typeInto("#method", "add"), typeInto("#params", "[1, 2]"))
	eval[bool](tb, `(scrollTo(0, 0), true)`)
	tb.screenshot("playground-desktop.png")
	darkScreenshot(t, tb)

	// At phone width nothing is wider than the screen.
	tb.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile))
	if w := eval[int](tb, `document.documentElement.scrollWidth`); w > 390 {
		t.Errorf("at 390 px the page is %d px wide", w)
	}
	// There the Frames card comes right under the Request card, near the
	// buttons that send the frames.
	if !eval[bool](tb, `document.querySelector(".frames").getBoundingClientRect().top < document.querySelector("#calls").getBoundingClientRect().top`) {
		t.Error("at 390 px the Frames card is not above the Calls card")
	}
	eval[bool](tb, `(scrollTo(0, 0), true)`)
	tb.screenshot("playground-phone.png")

	// The workbench: a saved request, and the request copied as curl.
	tb.do(
		chromedp.EmulateViewport(1280, 900),
		typeInto("#method", "subtract"), typeInto("#params", `{"minuend": 42, "subtrahend": 23}`),
		typeInto("#save-name", "subtract by name"), chromedp.Click(chromedp.CSS("#save-form button")),
		chromedp.SetValue(chromedp.CSS("#copy-as"), "curl"),
		chromedp.Evaluate[chromedp.Void](`document.querySelector("#copy-as").dispatchEvent(new Event("change"))`),
	)
	tb.waitText("#tool-text", "curl -sS")
	tb.waitText("#saved .chip", "subtract by name")
	eval[bool](tb, `(document.querySelector("#tool-out").scrollIntoView({block: "center"}), true)`)
	tb.screenshot("playground-workbench.png")
}

// darkScreenshot saves the page in the dark color scheme.
func darkScreenshot(t *testing.T, tb *tab) {
	t.Helper()
	if os.Getenv("SWITCHBOARD_SCREENSHOTS") == "" {
		return
	}
	tb.do(colorScheme("dark"))
	tb.screenshot("playground-dark.png")
	tb.do(colorScheme("light"))
}

// colorScheme emulates prefers-color-scheme, and reduced motion, so that
// a screenshot does not catch the colors in a transition.
func colorScheme(scheme string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{
				{Name: "prefers-color-scheme", Value: scheme},
				{Name: "prefers-reduced-motion", Value: "reduce"},
			},
		})
		return err
	})
}

// Without a token, the page says the hub needs one and asks for it.
func TestPlaygroundNeedsToken(t *testing.T) {
	file := testkit.WriteFile(t, filepath.Join(t.TempDir(), "tokens"), []byte("s3cret\n"))
	h := hubproc.Start(t, &hubproc.Options{Args: []string{"-demo", "-token-file", file}})
	tb := newTab(t)
	tb.do(
		chromedp.Navigate(h.URL()+"/"),
		chromedp.WaitVisible(chromedp.CSS("#banner")),
		chromedp.WaitVisible(chromedp.CSS("#token-form")),
	)
	tb.waitText("#banner-text", "HTTP 401 Unauthorized (the hub needs a token)")
	if state := eval[string](tb, `document.querySelector("#conn").dataset.state`); !strings.Contains("disconnected connecting", state) {
		t.Errorf("state %q", state)
	}
}

// The browser cannot set an Authorization header: the client sends the
// token as a WebSocket subprotocol. A page with the right token gets in,
// one with a wrong token is refused, and the playground connects once the
// token is typed into its form.
func TestTokenAsSubprotocol(t *testing.T) {
	file := testkit.WriteFile(t, filepath.Join(t.TempDir(), "tokens"), []byte("s3cret\n"))
	tb, h := openClientPage(t, "-token-file", file)
	got := eval[struct {
		Sum      float64
		Protocol string
		Wrong    string
	}](tb, `(async () => {
  const out = {};
  const rpc = await sb.connect(hub, { token: "s3cret" });
  out.sum = await rpc.call("add", [20, 22]);
  rpc.close();
  const wrong = sb.connect(hub, { token: "guess" });
  try { await wrong; out.wrong = "connected"; } catch (e) { out.wrong = String(e.message); }
  return out;
})()`)
	if got.Sum != 42 {
		t.Errorf("with the token: add gave %v", got.Sum)
	}
	// From another origin too, the client learns why: the hub answers its
	// probe's CORS preflight.
	if !strings.HasPrefix(got.Wrong, "cannot connect") || !strings.Contains(got.Wrong, "HTTP 401") {
		t.Errorf("with a wrong token: %q, want the connection refused with HTTP 401", got.Wrong)
	}

	pg := newTab(t)
	pg.do(
		chromedp.Navigate(h.URL()+"/"),
		chromedp.WaitVisible(chromedp.CSS("#token-form")),
		chromedp.SendKeys(chromedp.CSS("#token"), "s3cret\n"),
	)
	pg.waitText("#conn-text", "connected")
}
