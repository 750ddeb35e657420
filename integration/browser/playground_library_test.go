package browser_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/switchboard-rpc/switchboard/integration/internal/hubproc"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

// A saved request and the recent ones survive a reload; the saved ones go
// out as a file and come in from one.
func TestPlaygroundSavedRequests(t *testing.T) {
	tb, _ := openPlayground(t, 1280, 900)
	params := `{"minuend": 42, "subtrahend": 23}`
	tb.do(
		typeInto("#method", "subtract"), typeInto("#params", params),
		typeInto("#save-name", "the answer"), chromedp.Click(chromedp.CSS("#save-form button")),
		chromedp.Click(chromedp.CSS("#call")),
	)
	tb.waitText("#calls .entry:first-child pre.result", "19")
	tb.waitText("#recent", "subtract "+params)

	tb.do(chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="open"]`)))
	tb.waitText("#recent .entry", "subtract "+params)
	tb.do(typeInto("#method", "add"), typeInto("#params", "[1, 2]"), chromedp.Click(chromedp.CSS(`#saved .chip[data-name="the answer"] .chip-open`)))
	if got := eval[string](tb, `document.querySelector("#method").value + " " + document.querySelector("#params").value`); got != "subtract "+params {
		t.Errorf("the saved request opens as %q", got)
	}

	exported := eval[string](tb, `(() => {
  document.querySelector("#export-saved").click();
  return decodeURIComponent(document.querySelector("#export-link").href.split(",").slice(1).join(","));
})()`)
	if !strings.Contains(exported, `"name": "the answer"`) || !strings.Contains(exported, `"params": "{\"minuend\": 42, \"subtrahend\": 23}"`) {
		t.Errorf("exported: %s", exported)
	}
	file := testkit.WriteFile(t, filepath.Join(t.TempDir(), "requests.json"), []byte(`{"saved": [{"name": "imported", "method": "add", "params": "[20, 22]"}]}`))
	tb.do(chromedp.SetUploadFiles(chromedp.CSS("#import-saved"), []string{file}))
	tb.waitText("#library-result", "Imported 1 request")
	tb.do(chromedp.Click(chromedp.CSS(`#saved .chip[data-name="imported"] .chip-open`)), chromedp.Click(chromedp.CSS("#call")))
	tb.waitText("#calls .entry:first-child pre.result", "42")
	if n := eval[int](tb, `document.querySelectorAll("#saved .chip").length`); n != 2 {
		t.Errorf("%d saved requests, want 2", n)
	}
}

// A link to a request opens a fresh page with the request in the form, as
// typed, and the page's hub.
func TestPlaygroundShareLink(t *testing.T) {
	tb, h := openPlayground(t, 1280, 900)
	params := `[12345678901234567890, "a&b #c"]`
	tb.do(typeInto("#method", "echo"), typeInto("#params", params), chromedp.Click(chromedp.CSS("#share")))
	tb.waitText("#tool-text", h.URL())
	link := tb.text("#tool-text")

	fresh := openPage(t, h.URL(), strings.TrimPrefix(link, h.URL()+"/"))
	fresh.do(chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="open"]`)))
	if got := eval[string](fresh, `document.querySelector("#method").value + " " + document.querySelector("#params").value`); got != "echo "+params {
		t.Fatalf("the link opens with %q", got)
	}
	fresh.do(chromedp.Click(chromedp.CSS("#call")))
	fresh.waitText("#calls .entry:first-child pre.result", `[12345678901234567890, "a&b #c"]`)
}

// Copy as writes a curl command and an rpc command line that run as they
// are against the hub.
func TestPlaygroundCopyAs(t *testing.T) {
	tb, _ := openPlayground(t, 1280, 900)
	rpc, err := hubproc.Command("rpc")
	if err != nil {
		t.Fatal(err)
	}
	tb.do(typeInto("#method", "subtract"), typeInto("#params", `{"minuend": 42, "subtrahend": 23}`))
	run := func(format string) string {
		t.Helper()
		tb.do(
			chromedp.SetValue(chromedp.CSS("#copy-as"), format),
			chromedp.Evaluate[chromedp.Void](`document.querySelector("#copy-as").dispatchEvent(new Event("change"))`),
		)
		tb.waitTrue("the "+format+" text", `document.querySelector("#tool-out").dataset.kind === "`+format+`"`)
		line := tb.text("#tool-text")
		cmd := exec.CommandContext(t.Context(), "sh", "-c", line)
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(rpc)+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if out := run("curl"); out != `{"jsonrpc":"2.0","id":1,"result":19}` {
		t.Errorf("curl: %s", out)
	}
	if out := run("cli"); out != "19" {
		t.Errorf("rpc: %s", out)
	}
}

// The frame log filters by direction, kind and text, and exports what it
// holds as JSON lines.
func TestPlaygroundFrameFilter(t *testing.T) {
	tb, _ := openPlayground(t, 1280, 900)
	tb.do(
		chromedp.Click(chromedp.CSS("#clear-frames")),
		typeInto("#method", "add"), typeInto("#params", "[1, 2]"), chromedp.Click(chromedp.CSS("#call")),
		chromedp.SetValue(chromedp.CSS("#method"), "nope"), typeInto("#params", ""), chromedp.Click(chromedp.CSS("#call")),
	)
	tb.waitText("#calls .entry:first-child .badge", "error")
	shown := func() string {
		return eval[string](tb, `[...document.querySelectorAll("#frames .frame")].filter((f) => !f.hidden).map((f) => f.querySelector(".dir").textContent + f.querySelector(".kind").textContent).join(" ")`)
	}
	tb.do(typeInto("#frame-filter", "nope"))
	if got := shown(); got != "↑call" {
		t.Errorf("searching nope shows %q", got)
	}
	tb.waitText("#frame-matches", "1 match")
	tb.do(typeInto("#frame-filter", ""), chromedp.SetValue(chromedp.CSS("#frame-dir"), "receive"),
		chromedp.Evaluate[chromedp.Void](`document.querySelector("#frame-dir").dispatchEvent(new Event("change"))`))
	if got := shown(); strings.Contains(got, "↑") || !strings.Contains(got, "↓result") || !strings.Contains(got, "↓error") {
		t.Errorf("received frames: %q", got)
	}
	tb.do(chromedp.SetValue(chromedp.CSS("#frame-kind"), "error"),
		chromedp.Evaluate[chromedp.Void](`document.querySelector("#frame-kind").dispatchEvent(new Event("change"))`))
	if got := shown(); got != "↓error" {
		t.Errorf("received errors: %q", got)
	}
	n := eval[int](tb, `document.querySelectorAll("#frames .frame").length`)
	lines := eval[[]string](tb, `(() => {
  document.querySelector("#export-frames").click();
  const href = document.querySelector("#export-frames-link").href;
  return decodeURIComponent(href.slice(href.indexOf(",") + 1)).trim().split("\n");
})()`)
	if len(lines) != n {
		t.Fatalf("exported %d lines of %d frames: %q", len(lines), n, lines)
	}
	for _, l := range lines {
		var f struct {
			Time, Direction string
			Message         map[string]any
		}
		if err := json.Unmarshal([]byte(l), &f); err != nil || f.Time == "" || f.Direction == "" || f.Message["jsonrpc"] != "2.0" {
			t.Errorf("exported line %s: %+v %v", l, f, err)
		}
	}
}

// The first screen names the cards below it, and each name leads there.
func TestPlaygroundSectionsOnFirstScreen(t *testing.T) {
	tb, _ := openPlayground(t, 1280, 900)
	for _, size := range [][2]int64{{1280, 900}, {390, 844}} {
		tb.do(chromedp.EmulateViewport(size[0], size[1]))
		eval[bool](tb, `(scrollTo(0, 0), true)`)
		got := eval[string](tb, `[...document.querySelectorAll("#sections a")].filter((a) => a.getBoundingClientRect().bottom <= innerHeight).map((a) => a.textContent).join(", ")`)
		for _, want := range []string{"Saved requests", "History", "Peers", "Methods this page serves", "Frames"} {
			if !strings.Contains(got, want) {
				t.Errorf("at %d px the first screen names %q, not %s", size[0], got, want)
			}
		}
	}
	tb.do(chromedp.Click(chromedp.Search(`//nav[@id="sections"]/a[text()="Peers"]`)))
	tb.waitTrue("the Peers card in view", `(() => { const r = document.querySelector("#peers-title").getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight; })()`)
}
