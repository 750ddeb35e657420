package browser_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/switchboard-rpc/switchboard/integration/internal/hubproc"
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
	file := filepath.Join(t.TempDir(), "requests.json")
	if err := os.WriteFile(file, []byte(`{"saved": [{"name": "imported", "method": "add", "params": "[20, 22]"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
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
