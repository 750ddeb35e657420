package browser_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// History read since a position of another epoch says the hub gave all it
// holds, not "after seq N".
func TestPlaygroundHistoryOtherEpoch(t *testing.T) {
	tb, h := openPlayground(t, 1280, 900)
	publish(t, h.URL(), "chat.room1", `{"text":"one"}`)
	publish(t, h.URL(), "chat.room1", `{"text":"two"}`)
	tb.do(
		typeInto("#history-since", "1"), typeInto("#history-epoch", "elsewhere"),
		chromedp.Click(chromedp.CSS("#history-form button")),
	)
	tb.waitText("#history-result", "2 events of chat.>")
	if got := tb.text("#history-result"); strings.Contains(got, "after seq 1") || !strings.Contains(got, "another epoch") {
		t.Errorf("history since another epoch: %q", got)
	}
}

// A restart is told once, however many subscriptions learn of it, and a
// marker in the Events list parts the events from before it from those
// after.
func TestPlaygroundRestartMarkedOnce(t *testing.T) {
	tb, h := openPlayground(t, 1280, 900)
	for _, p := range []string{"chat.*", "news.>"} {
		tb.do(typeInto("#pattern", p), chromedp.Click(chromedp.CSS("#subscribe-form button")))
	}
	tb.waitTrue("two subscriptions", `document.querySelectorAll("#subs .chip:not(.pending)").length === 2`)
	publish(t, h.URL(), "chat.room1", `{"text":"before"}`)
	tb.waitText("#events .entry", "before")
	if err := h.Stop(); err != nil {
		t.Fatal(err)
	}
	h.Restart()
	tb.waitText("#events .marker", "news.>")
	tb.waitText("#events .marker", "chat.*")
	publish(t, h.URL(), "chat.room1", `{"text":"after"}`)
	tb.waitText("#events .entry:first-child", "after")
	order := eval[string](tb, `[...document.querySelectorAll("#events > li")].map((li) => li.classList.contains("marker") ? "|" : li.textContent.includes("after") ? "a" : "b").join("")`)
	if order != "a|b" {
		t.Errorf("the Events list, newest first (a: after, |: marker, b: before): %q", order)
	}
	if n := eval[int](tb, `[...document.querySelectorAll("#calls .explain")].filter((p) => p.textContent.includes("The hub restarted")).length`); n != 1 {
		t.Errorf("%d notes of the restart", n)
	}
}

// A call waiting for this page's answer, lost with the page's own
// connection, says so, not that the caller cancelled it.
func TestPlaygroundProvidedCallLost(t *testing.T) {
	a, h := openPlayground(t, 1280, 900)
	b := openSecondPlayground(t, h.URL())
	a.do(
		typeInto("#serve-name", "tab.ask"),
		chromedp.Click(chromedp.CSS("#serve-provide")),
		chromedp.Click(chromedp.CSS("#register-form button")),
		chromedp.WaitVisible(chromedp.CSS(`#served .chip[data-method="tab.ask"]:not(.pending)`)),
	)
	// The call is sent with the button's own click (not the mouse at its
	// place, which a panel growing above it under load may move), and
	// seen in b's Calls before a is asked.
	b.do(typeInto("#method", "tab.ask"), typeInto("#params", "{}"), chromedp.Evaluate[chromedp.Void](`document.querySelector("#call").click()`))
	b.waitText("#calls .entry:first-child", "tab.ask")
	a.waitText("#incoming .entry:first-child .badge", "waiting for you")
	a.do(chromedp.Click(chromedp.CSS("#reconnect")))
	a.waitText("#incoming .entry:first-child .badge", "lost with this page's connection")
	b.waitText("#calls .entry:first-child .badge", "error")
}

// System methods show their params.
func TestPlaygroundSystemSignatures(t *testing.T) {
	tb, _ := openPlayground(t, 1280, 900)
	tb.do(typeInto("#method", "rpc.call"))
	tb.waitText("#method-info .sig", "rpc.call(peer?: string, user?: string, topic?: string, method: string")
	tb.do(typeInto("#method", "rpc.history"))
	tb.waitText("#method-info .sig", "rpc.history(topic: string, limit?: integer, since?: {epoch: string, seq: integer})")
}

// The Frames count counts what the log shows: hidden pings are not.
func TestPlaygroundFramesCountSkipsPings(t *testing.T) {
	tb, _ := openPlayground(t, 1280, 900)
	tb.do(chromedp.Click(chromedp.CSS("#clear-frames")), typeInto("#method", "add"), typeInto("#params", "[1, 2]"), chromedp.Click(chromedp.CSS("#call")))
	tb.waitText("#calls .entry:first-child .badge", "result")
	tb.do(typeInto("#method", "rpc.ping"), typeInto("#params", ""), chromedp.Click(chromedp.CSS("#call")))
	tb.waitText("#calls .entry:first-child .badge", "result")
	tb.waitTrue("the ping's answer in the log", `document.querySelectorAll("#frames [data-ping]").length === 2`)
	if got := tb.text("#frame-count"); got != "2" {
		t.Errorf("with pings hidden the count is %q, want 2", got)
	}
	tb.do(chromedp.Click(chromedp.CSS("#show-pings")))
	if got := tb.text("#frame-count"); got != "4" {
		t.Errorf("with pings shown the count is %q, want 4", got)
	}
}

// A batch of notifications alone says what became of it, not "0/0 ok".
func TestPlaygroundNotificationBatch(t *testing.T) {
	tb, _ := openPlayground(t, 1280, 900)
	tb.do(
		typeInto("#method", "notify_hello"), typeInto("#params", "[7]"), chromedp.Click(chromedp.CSS("#add-batch-notify")),
		typeInto("#method", "update"), typeInto("#params", "[1]"), chromedp.Click(chromedp.CSS("#add-batch-notify")),
		chromedp.Click(chromedp.CSS("#send-batch")),
	)
	tb.waitText("#calls .entry:first-child .badge", "2 sent, none answered")
}

// Progress reports of one call fold into one frame that counts them.
func TestPlaygroundProgressFolds(t *testing.T) {
	tb, _ := openPlayground(t, 1280, 900)
	tb.do(typeInto("#method", "sleep"), typeInto("#params", `{"ms": 1000}`), chromedp.Click(chromedp.CSS("#call")))
	tb.waitText("#calls .entry:first-child .badge", "result")
	got := eval[[]string](tb, `[...document.querySelectorAll("#frames .frame")].filter((f) => f.querySelector(".kind").textContent === "progress").map((f) => f.querySelector(".times")?.textContent ?? "")`)
	if len(got) != 1 || !strings.HasPrefix(got[0], "× ") || got[0] == "× 1" {
		t.Errorf("progress frames: %q, want one that counts several", got)
	}
}

// The tabs move with the arrow keys, Home and End, and only the selected
// one is a tab stop.
func TestPlaygroundTabsArrowKeys(t *testing.T) {
	tb, _ := openPlayground(t, 1280, 900)
	selected := `document.activeElement.id + " " + document.querySelector('[aria-selected="true"]').id + " " + document.querySelector("#pane-raw").hidden`
	tb.do(chromedp.Focus(chromedp.CSS("#tab-method")), chromedp.KeyEvent(kb.ArrowRight))
	if got := eval[string](tb, selected); got != "tab-raw tab-raw false" {
		t.Errorf("after ArrowRight: %q", got)
	}
	tb.do(chromedp.KeyEvent(kb.ArrowRight))
	if got := eval[string](tb, selected); got != "tab-method tab-method true" {
		t.Errorf("after ArrowRight from the last tab: %q", got)
	}
	if got := eval[string](tb, `[...document.querySelectorAll('[role="tab"]')].map((t) => t.tabIndex).join(" ")`); got != "0 -1" {
		t.Errorf("tab stops: %q", got)
	}
}

// contrastJS lists the texts (and placeholders) of the page under 4.5:1 against what is
// behind them, each color read back from a canvas, so that any CSS color
// syntax counts.
const contrastJS = `(() => {
  const cv = document.createElement("canvas");
  cv.width = cv.height = 1;
  const g = cv.getContext("2d", { willReadFrequently: true });
  const rgba = (c) => { g.clearRect(0, 0, 1, 1); g.fillStyle = "#000"; g.fillStyle = c; g.fillRect(0, 0, 1, 1); const d = g.getImageData(0, 0, 1, 1).data; return [d[0], d[1], d[2], d[3] / 255]; };
  const over = (top, below) => [0, 1, 2].map((i) => top[i] * top[3] + below[i] * (1 - top[3])).concat(1);
  const lum = (c) => { const f = (v) => (v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
  const background = (e) => {
    const layers = [];
    for (let x = e; x; x = x.parentElement) layers.push(rgba(getComputedStyle(x).backgroundColor));
    return layers.reverse().reduce((below, top) => over(top, below), [255, 255, 255, 1]);
  };
  const bad = [];
  for (const e of document.body.querySelectorAll("*")) {
    // A text, or an empty field's placeholder.
    const placeholder = e.placeholder && e.value === "";
    if (!placeholder && ![...e.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim() !== "")) continue;
    if (!e.checkVisibility({ visibilityProperty: true }) || e.closest(".sr")) continue;
    const bg = background(e);
    const fg = over(rgba(getComputedStyle(e, placeholder ? "::placeholder" : null).color), bg);
    const [hi, lo] = [lum(fg), lum(bg)].sort((x, y) => y - x);
    const ratio = (hi + 0.05) / (lo + 0.05);
    if (ratio < 4.5) bad.push((e.id ? "#" + e.id : e.className ? e.tagName.toLowerCase() + "." + String(e.className).replace(/ /g, ".") : e.tagName.toLowerCase()) + " " + JSON.stringify(e.textContent.trim().slice(0, 30)) + " " + ratio.toFixed(2));
  }
  return bad;
})()`

// Every text of the page, badges of each kind among them, reads at 4.5:1
// or more in both themes; the page has an h1, and the Calls and Events
// lists are live regions.
func TestPlaygroundAccessibility(t *testing.T) {
	tb, h := openPlayground(t, 1280, 900)
	tb.do(typeInto("#pattern", "chat.*"), chromedp.Click(chromedp.CSS("#subscribe-form button")), chromedp.WaitVisible(chromedp.CSS("#subs .chip:not(.pending)")))
	publish(t, h.URL(), "chat.room1", `{"text":"hi"}`)
	tb.do(
		typeInto("#method", "add"), typeInto("#params", "[1, 2]"), chromedp.Click(chromedp.CSS("#call")),
		chromedp.SetValue(chromedp.CSS("#method"), "nope"), typeInto("#params", ""), chromedp.Click(chromedp.CSS("#call")),
		typeInto("#method", "sleep"), typeInto("#params", `{"ms": 60000}`), chromedp.Click(chromedp.CSS("#call")),
		chromedp.Click(chromedp.CSS(`[data-try*="confirm"]`)),
		chromedp.Click(chromedp.CSS("#whoami")), chromedp.Click(chromedp.CSS("#presence-form button")),
	)
	tb.waitText("#calls .entry .badge.err", "error -32601")
	tb.waitText("#incoming .entry .badge", "waiting for you")
	tb.waitText("#peers .peer .badge", "you")
	tb.waitText("#events .entry .badge", "event")
	for _, scheme := range []string{"light", "dark"} {
		tb.do(colorScheme(scheme))
		if bad := eval[[]string](tb, contrastJS); len(bad) > 0 {
			t.Errorf("%s: under 4.5:1:\n%s", scheme, strings.Join(bad, "\n"))
		}
	}
	if got := eval[string](tb, `document.querySelector("h1")?.textContent.trim().replace(/\s+/g, " ") ?? ""`); !strings.Contains(got, "Switchboard") {
		t.Errorf("h1: %q", got)
	}
	for _, id := range []string{"calls", "events"} {
		if got := eval[string](tb, fmt.Sprintf(`document.getElementById(%q).getAttribute("aria-live") ?? ""`, id)); got != "polite" {
			t.Errorf("#%s aria-live=%q", id, got)
		}
	}
}
