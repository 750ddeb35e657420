package browser_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// sendRaw sends text from the Raw JSON tab.
func sendRaw(text string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(
		chromedp.Click(chromedp.CSS("#tab-raw")),
		chromedp.SetValue(chromedp.CSS("#raw"), text),
		chromedp.Click(chromedp.CSS("#pane-raw button.primary")),
	)
}

// The specification's examples of invalid batches are answered, one
// -32600 per element, and the reply box waits for that.
func TestPlaygroundInvalidBatchesAreAnswered(t *testing.T) {
	tb, _ := openPlayground(t, 1280, 900)
	for _, ex := range []struct {
		name string
		errs int
	}{{"invalid batch of 3", 3}, {"invalid batch", 1}} {
		tb.do(
			chromedp.Click(chromedp.CSS("#tab-raw")),
			chromedp.Click(chromedp.Search(`//button[text()="`+ex.name+`"]`)),
			chromedp.Click(chromedp.CSS("#pane-raw button.primary")),
		)
		tb.waitText("#raw-reply pre", "-32600")
		reply := tb.text("#raw-reply")
		if strings.Contains(reply, "None expected") || strings.Count(reply, "-32600") < ex.errs {
			t.Errorf("%s: the reply box says %q", ex.name, reply)
		}
	}
	// A batch of notifications alone is never answered.
	tb.do(
		chromedp.Click(chromedp.Search(`//button[text()="batch of notifications"]`)),
		chromedp.Click(chromedp.CSS("#pane-raw button.primary")),
	)
	tb.waitText("#raw-reply", "None expected")
}

// A raw request whose id is beyond 2^53 is sent, and its answer shows the
// id as it was written.
func TestPlaygroundRawBigID(t *testing.T) {
	tb, _ := openPlayground(t, 1280, 900)
	tb.do(sendRaw(`{"jsonrpc":"2.0","method":"add","params":[1,2],"id":123456789012345678901234567890}`))
	tb.waitText("#raw-reply pre", `"result": 3`)
	if reply := tb.text("#raw-reply pre"); !strings.Contains(reply, "123456789012345678901234567890") {
		t.Errorf("the reply shows %q, not the id as written", reply)
	}
	tb.waitText("#frames .frame.receive .summary", "#123456789012345678901234567890")
	if calls := tb.text("#calls"); strings.Contains(calls, "Not sent") {
		t.Errorf("calls: %s", calls)
	}
}

// A malformed raw message sent while a batch is in flight gets its -32700;
// the batch gets both its answers.
func TestPlaygroundParseErrorLeavesBatch(t *testing.T) {
	tb, _ := openPlayground(t, 1280, 900)
	tb.do(
		typeInto("#method", "sleep"), typeInto("#params", `{"ms": 1500}`), chromedp.Click(chromedp.CSS("#add-batch")),
		typeInto("#method", "add"), typeInto("#params", "[1, 2]"), chromedp.Click(chromedp.CSS("#add-batch")),
		chromedp.Click(chromedp.CSS("#send-batch")),
		chromedp.Click(chromedp.CSS("#tab-raw")),
		chromedp.Click(chromedp.Search(`//button[text()="invalid JSON"]`)),
		chromedp.Click(chromedp.CSS("#pane-raw button.primary")),
	)
	tb.waitText("#raw-reply", "-32700")
	tb.waitText("#calls .entry .badge", "2/2 ok")
	if calls := tb.text("#calls"); strings.Contains(calls, "Parse error") {
		t.Errorf("the batch took the parse error: %s", calls)
	}
}

// The Method tab keeps big integers exact, describes the demo methods
// from their own rpc.discover entries, and queues notifications into a
// batch as notifications.
func TestPlaygroundMethodTab(t *testing.T) {
	tb, _ := openPlayground(t, 1280, 900)
	tb.do(typeInto("#method", "echo"), typeInto("#params", "[12345678901234567890]"), chromedp.Click(chromedp.CSS("#call")))
	tb.waitText("#calls .entry:first-child .badge", "result")
	if got := tb.text("#calls .entry:first-child pre.result"); got != "[12345678901234567890]" {
		t.Errorf("echo of a big integer shows %q", got)
	}

	tb.do(typeInto("#method", "sum"))
	tb.waitText("#method-info .sig", "sum(...params: number)")
	tb.waitText("#method-info p", "Adds any count of numbers")
	tb.do(typeInto("#method", "sleep"))
	tb.waitText("#method-info td", "how long to wait")

	tb.do(
		typeInto("#method", "notify_hello"), typeInto("#params", "[7]"), chromedp.Click(chromedp.CSS("#add-batch-notify")),
		typeInto("#method", "subtract"), typeInto("#params", "[42, 23]"), chromedp.Click(chromedp.CSS("#add-batch")),
	)
	tb.waitText("#batch-items", "notify notify_hello")
	tb.do(chromedp.Click(chromedp.CSS("#send-batch")))
	tb.waitText("#calls .entry:first-child .badge", "1/1 ok")
	tb.waitText("#frames .frame.send .summary", "notification, call")
	if got := tb.text("#calls .entry:first-child pre.result"); !strings.Contains(got, "never answered") || strings.Count(got, `"result"`) != 1 {
		t.Errorf("the batch's answers: %s", got)
	}
}

// After the hub restarts, the page says why its subscriptions could not
// be resumed; a publish and a call made while it was down wait for the
// connection, and say so.
func TestPlaygroundHubRestart(t *testing.T) {
	tb, h := openPlayground(t, 1280, 900)
	tb.do(chromedp.Click(chromedp.CSS("#subscribe-form button")), chromedp.WaitVisible(chromedp.CSS("#subs .chip:not(.pending)")))
	if err := h.Stop(); err != nil {
		t.Fatal(err)
	}
	tb.waitText("#conn-text", "disconnected")
	tb.do(chromedp.Click(chromedp.CSS("#publish-form button")))
	tb.waitText("#publish-result", "waits for the connection")
	tb.do(chromedp.Click(chromedp.CSS("#tab-method")), typeInto("#method", "add"), typeInto("#params", "[2, 3]"), chromedp.Click(chromedp.CSS("#call")))
	h.Restart()
	tb.waitText("#conn-text", "connected")
	tb.waitText("#publish-result", "Published on chat.room1")
	tb.waitText("#calls .entry .explain", "The hub restarted")
	tb.waitText("#calls .entry .meta", "#")
	if calls := tb.text("#calls"); strings.Contains(calls, "no longer held") {
		t.Errorf("after a restart the page blames the history: %s", calls)
	}
}
