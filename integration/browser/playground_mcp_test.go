package browser_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/switchboard-rpc/switchboard/integration/internal/hubproc"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

// mcpConfig is the client configuration the Agents (MCP) panel shows.
type mcpConfig struct {
	MCPServers map[string]struct {
		Type    string            `json:"type"`
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers"`
	} `json:"mcpServers"`
}

func readMCPConfig(t *testing.T, tb *tab) mcpConfig {
	t.Helper()
	text := tb.text("#mcp-snippet")
	var c mcpConfig
	if err := json.Unmarshal([]byte(text), &c); err != nil {
		t.Fatalf("the snippet is not JSON: %v\n%s", err, text)
	}
	return c
}

// The Agents (MCP) panel lists the tools an agent sees at the hub's /mcp:
// the demo's methods, never an rpc.* one; a method another peer provides
// joins the list while the page is open, and leaves it with its provider;
// one the page itself provides joins it too. The snippet points an MCP
// client at the hub's /mcp.
func TestPlaygroundMCPPanel(t *testing.T) {
	tb, h := openPlayground(t, 1280, 900)
	tb.waitTrue("the demo's add in the tool list", `!!document.querySelector('#mcp-tools [data-tool="add"]')`)
	tb.waitText("#mcp-status", "tools, as tools/list answers an agent")
	if n := eval[int](tb, `document.querySelectorAll('#mcp-tools [data-tool^="rpc."]').length`); n != 0 {
		t.Errorf("%d rpc.* methods listed as tools", n)
	}
	if got := tb.text("#sections"); !strings.Contains(got, "Agents (MCP)") {
		t.Errorf("the first screen's links: %q", got)
	}

	c := readMCPConfig(t, tb)
	sw, ok := c.MCPServers["switchboard"]
	if !ok || sw.Type != "http" || sw.URL != h.URL()+"/mcp" {
		t.Errorf("the snippet's server: %+v (ok %v), want type http, url %s/mcp", sw, ok, h.URL())
	}
	if len(sw.Headers) != 0 {
		t.Errorf("headers in the snippet of a page without a token: %v", sw.Headers)
	}
	if got := tb.text("#mcp-url"); got != h.URL()+"/mcp" {
		t.Errorf("the endpoint shown: %q", got)
	}

	// Another peer provides a described method: it becomes a tool with
	// its params, without the page being touched.
	svc := provideCents(t, h.WebSocketURL(), "svc.price")
	tb.waitText(`#mcp-tools [data-tool="svc.price"]`, "cents")

	// The page provides one to every peer: a tool as well.
	tb.do(
		typeInto("#serve-name", "tab.summary"),
		chromedp.Click(chromedp.CSS("#serve-provide")),
		chromedp.Click(chromedp.CSS("#register-form button")),
	)
	tb.waitTrue("tab.summary in the tool list", `!!document.querySelector('#mcp-tools [data-tool="tab.summary"]')`)

	// The provider leaves: its tool goes.
	if err := svc.Close(); err != nil {
		t.Fatal(err)
	}
	tb.waitTrue("svc.price gone from the tool list", `!document.querySelector('#mcp-tools [data-tool="svc.price"]')`)

	// The name of a tool puts the method into the Request form.
	tb.do(chromedp.Click(chromedp.CSS(`#mcp-tools [data-tool="subtract"] button`)))
	if m := eval[string](tb, `document.querySelector("#method").value`); m != "subtract" {
		t.Errorf("the form's method after clicking subtract: %q", m)
	}
}

// With a token, the panel's session uses it (the hub lets it in and lists
// its tools), and the snippet has an Authorization header that names the
// token by its variable, never the token itself.
func TestPlaygroundMCPPanelToken(t *testing.T) {
	tokens := testkit.WriteFile(t, filepath.Join(t.TempDir(), "tokens"), []byte("alice-secret\n"))
	h := hubproc.Start(t, &hubproc.Options{Args: []string{"-demo", "-token-file", tokens}})
	tb := newTab(t)
	tb.do(
		chromedp.EmulateViewport(1280, 900),
		chromedp.Navigate(h.URL()+"/?token=alice-secret"),
		chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="open"]`)),
	)
	tb.waitTrue("the demo's add in the tool list", `!!document.querySelector('#mcp-tools [data-tool="add"]')`)
	tb.waitText("#mcp-status", "its token")
	c := readMCPConfig(t, tb)
	sw := c.MCPServers["switchboard"]
	if sw.URL != h.URL()+"/mcp" || sw.Headers["Authorization"] != "Bearer ${SWITCHBOARD_TOKEN}" {
		t.Errorf("the snippet's server: %+v", sw)
	}
	if strings.Contains(tb.text("#mcp-card"), "alice-secret") {
		t.Error("the panel shows the token")
	}
}

// A hub that does not serve MCP: the panel says how to turn it on, and
// still shows the configuration.
func TestPlaygroundMCPPanelOff(t *testing.T) {
	h := hubproc.Start(t, nil)
	tb := newTab(t)
	tb.do(
		chromedp.EmulateViewport(1280, 900),
		chromedp.Navigate(h.URL()+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#conn[data-state="open"]`)),
	)
	tb.waitText("#mcp-status", "This hub does not serve MCP: start it with -mcp")
	if n := eval[int](tb, `document.querySelectorAll("#mcp-tools li").length`); n != 0 {
		t.Errorf("%d tools listed by a hub without MCP", n)
	}
	if c := readMCPConfig(t, tb); c.MCPServers["switchboard"].URL != h.URL()+"/mcp" {
		t.Errorf("the snippet: %+v", c)
	}
}
