package browser_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// openSecondPlayground opens another tab of the playground on the same
// hub, once it is connected.
func openSecondPlayground(t *testing.T, url string) *tab {
	t.Helper()
	tb := newTab(t)
	tb.do(
		chromedp.EmulateViewport(1280, 900),
		chromedp.Navigate(url+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="open"]`)),
		chromedp.WaitReady(chromedp.CSS(`#methods option[value="subtract"]`)),
	)
	return tb
}

// Events show their positions; the History panel reads what the hub
// holds, and with since only what came after a position.
func TestPlaygroundHistory(t *testing.T) {
	tb, h := openPlayground(t, 1280, 900)
	tb.do(chromedp.Click(chromedp.CSS("#subscribe-form button")), chromedp.WaitVisible(chromedp.CSS("#subs .chip:not(.pending)")))
	publish(t, h.URL(), "chat.room1", `"first"`)
	tb.waitText("#events .entry .pos", "seq ")
	first := strings.TrimPrefix(tb.text("#events .entry:first-child .pos"), "seq ")
	publish(t, h.URL(), "chat.room2", `"second"`)
	tb.waitText("#events .entry:first-child", "second")

	tb.do(chromedp.Click(chromedp.CSS("#history-form button")))
	tb.waitText("#history-result", "2 events of chat.>")
	if got := tb.text("#history"); !strings.Contains(got, "first") || !strings.Contains(got, "second") || !strings.Contains(got, "seq "+first) {
		t.Errorf("history: %s", got)
	}
	if epoch := eval[string](tb, `document.querySelector("#history-epoch").value`); epoch == "" {
		t.Error("the epoch field is not filled in")
	}
	// "since here" on the first event: only the second comes back.
	tb.do(chromedp.Click(chromedp.CSS("#history .entry:first-child button")), chromedp.Click(chromedp.CSS("#history-form button")))
	tb.waitText("#history-result", "1 event of chat.> after seq "+first)
	if got := tb.text("#history"); strings.Contains(got, "first") || !strings.Contains(got, "second") {
		t.Errorf("history since %s: %s", first, got)
	}
}

// The Peers panel shows who is on a topic, and peers joining and leaving
// as it happens.
func TestPlaygroundPresence(t *testing.T) {
	a, h := openPlayground(t, 1280, 900)
	a.do(chromedp.Click(chromedp.CSS("#presence-form button")))
	a.waitText("#presence-result", "1 peer on chat.room1")
	b := openSecondPlayground(t, h.URL())
	b.do(chromedp.Click(chromedp.CSS("#presence-form button")))
	b.waitText("#presence-result", "2 peers on chat.room1")
	a.waitText("#presence-result", "joined chat.room1")
	if n := eval[int](a, `document.querySelectorAll("#peers .peer").length`); n != 2 {
		t.Errorf("a lists %d peers, want 2", n)
	}
	// b leaves: it watches another topic instead.
	b.do(typeInto("#presence-topic", "chat.room2"), chromedp.Click(chromedp.CSS("#presence-form button")))
	b.waitText("#presence-result", "1 peer on chat.room2")
	a.waitText("#presence-result", "left chat.room1")
	if n := eval[int](a, `document.querySelectorAll("#peers .peer").length`); n != 1 {
		t.Errorf("after b left, a lists %d peers, want 1", n)
	}
}

// A method provided from one tab is called by name from another; the
// providing tab lists the call it answered.
func TestPlaygroundProvide(t *testing.T) {
	a, h := openPlayground(t, 1280, 900)
	a.do(
		serveReply("tab.hello", `"hi from tab a"`),
		chromedp.Click(chromedp.CSS("#serve-provide")),
		chromedp.Click(chromedp.CSS("#register-form button")),
	)
	a.do(chromedp.WaitVisible(chromedp.CSS(`#served .chip[data-method="tab.hello"]:not(.pending)`)))
	a.waitText(`#served .chip[data-method="tab.hello"]`, "provided")

	b := openSecondPlayground(t, h.URL())
	b.do(typeInto("#method", "tab.hello"), typeInto("#params", ""), chromedp.Click(chromedp.CSS("#call")))
	b.waitText("#calls .entry:first-child .badge", "result")
	if got := b.text("#calls .entry:first-child pre.result"); got != `"hi from tab a"` {
		t.Errorf("b's call of tab.hello: %s", got)
	}
	a.waitText("#incoming .entry:first-child", "tab.hello")
	a.waitText("#incoming .entry:first-child .badge", "answered")

	// A name the hub refuses to route: the page says so, and serves it to
	// the hub's own calls only.
	a.do(typeInto("#serve-name", "tab..bad"), chromedp.Click(chromedp.CSS("#register-form button")))
	a.waitText("#calls .entry .explain", "Providing tab..bad failed: -32602")
	a.waitText(`#served .chip[data-method="tab..bad"]`, "replies")
	if got := a.text(`#served .chip[data-method="tab..bad"]`); strings.Contains(got, "provided") {
		t.Errorf("a refused provision still shows as provided: %s", got)
	}
}
