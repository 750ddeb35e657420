package web_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/server"
	"github.com/switchboard-rpc/switchboard/server/demo"
	"github.com/switchboard-rpc/switchboard/server/prom"
	"github.com/switchboard-rpc/switchboard/web"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestHandler(t *testing.T) {
	ts := httptest.NewServer(web.Handler())
	defer ts.Close()
	for _, tt := range []struct {
		path, body, contentType string
		header                  map[string]string
	}{
		{"/", "<title>Switchboard playground</title>", "text/html", map[string]string{"Content-Security-Policy": "default-src 'self'"}},
		{"/playground.js", `from "./switchboard.js"`, "text/javascript", nil},
		{"/playground-topics.js", `from "./playground-view.js"`, "text/javascript", nil},
		{"/playground.css", "--accent", "text/css", nil},
		{"/favicon.svg", "<svg", "image/svg+xml", nil},
		// Pages of other origins may import the client.
		{"/switchboard.js", "export class Client", "text/javascript", map[string]string{"Access-Control-Allow-Origin": "*"}},
		{"/switchboard.d.ts", "export declare class Client", "application/typescript", map[string]string{"Access-Control-Allow-Origin": "*"}},
	} {
		resp, err := http.Get(ts.URL + tt.path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), tt.body) {
			t.Errorf("GET %s: %d, body lacks %q", tt.path, resp.StatusCode, tt.body)
		}
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, tt.contentType) {
			t.Errorf("GET %s: Content-Type %q, want %s", tt.path, ct, tt.contentType)
		}
		for k, v := range tt.header {
			if got := resp.Header.Get(k); !strings.Contains(got, v) {
				t.Errorf("GET %s: %s %q, want %q", tt.path, k, got, v)
			}
		}
	}
}

// TestSwitchboardModules follows the imports of switchboard.js from the
// handler: every module it is made of is served, to pages of any origin
// too (a cross-origin module import needs CORS on each file).
func TestSwitchboardModules(t *testing.T) {
	ts := httptest.NewServer(web.Handler())
	defer ts.Close()
	imports := regexp.MustCompile(`(?m)^(?:import|export) [^;]*? from "\./([a-z-]+\.js)";`)
	seen := map[string]bool{"switchboard.js": true}
	queue := []string{"switchboard.js"}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		resp, err := http.Get(ts.URL + "/" + name)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/javascript") {
			t.Errorf("GET /%s: %d, Content-Type %q", name, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "*" {
			t.Errorf("GET /%s: Access-Control-Allow-Origin %q, want *", name, got)
		}
		for _, m := range imports.FindAllStringSubmatch(string(b), -1) {
			if !seen[m[1]] {
				seen[m[1]] = true
				queue = append(queue, m[1])
			}
		}
	}
	if len(seen) < 2 {
		t.Fatalf("switchboard.js imports no module of its own: %v", seen)
	}
	t.Logf("modules: %d", len(seen))
}

// TestSwitchboardJS runs testdata/smoke.mjs with node (which make test
// needs) against a demo hub: calls, batches, errors, topics, calls
// from the hub, progress, cancellation and timeouts through switchboard.js.
func TestSwitchboardJS(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node not installed: make test needs Node.js (.ci/run installs it)")
	}
	m := prom.New()
	srv := server.New(&server.Options{Router: demo.Mux(), Hub: hub.New(&hub.Options{Policy: hub.AllowAll}), OnServe: m.Observe})
	m.Watch(srv)
	routes := http.NewServeMux()
	routes.Handle("/", srv)
	routes.Handle("/metrics", m)
	ts := httptest.NewServer(routes)
	defer ts.Close()
	defer srv.Shutdown(context.Background()) //nolint:errcheck

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	args := []string{"testdata/smoke.mjs", "ws" + strings.TrimPrefix(ts.URL, "http") + "/rpc"}
	// Without the ws package (npm ci), Node 21 and older need a flag for
	// the WebSocket global.
	_, err = os.Stat("node_modules/ws")
	if err != nil && exec.CommandContext(ctx, node, "-e", "process.exit(typeof WebSocket === 'undefined' ? 1 : 0)").Run() != nil {
		args = append([]string{"--experimental-websocket"}, args...)
	}
	out, err := exec.CommandContext(ctx, node, args...).CombinedOutput()
	t.Logf("node:\n%s", out)
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "done") {
		t.Fatalf("smoke.mjs: %v", err)
	}
	// The aborted and the timed-out calls reached the hub as rpc.cancel. (Shutdown first:
	// it waits until every connection's handlers have returned.)
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	metrics, _ := io.ReadAll(resp.Body)
	if want := `switchboard_calls_total{method="sleep",outcome="cancelled"} 2`; !strings.Contains(string(metrics), want) {
		t.Fatalf("metrics lack %s", want)
	}
}
