package web_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
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
	for path, want := range map[string]string{"/": "<title>Switchboard playground</title>", "/switchboard.js": "export class RPCError"} {
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), want) {
			t.Errorf("GET %s: %d, body lacks %q", path, resp.StatusCode, want)
		}
	}
}

// TestSwitchboardJS runs testdata/smoke.mjs with node, when node is
// installed, against a demo hub: calls, errors, topics, calls from the
// hub, progress and cancellation through switchboard.js.
func TestSwitchboardJS(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("node not installed; CI must run this test (.ci/run installs it)")
		}
		t.Skip("node not installed")
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
	// Node 21 and older need a flag for the WebSocket global.
	if exec.CommandContext(ctx, node, "-e", "process.exit(typeof WebSocket === 'undefined' ? 1 : 0)").Run() != nil {
		args = append([]string{"--experimental-websocket"}, args...)
	}
	out, err := exec.CommandContext(ctx, node, args...).CombinedOutput()
	t.Logf("node:\n%s", out)
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "done") {
		t.Fatalf("smoke.mjs: %v", err)
	}
	// The aborted call reached the hub as rpc.cancel. (Shutdown first:
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
	if want := `switchboard_calls_total{method="sleep",outcome="cancelled"} 1`; !strings.Contains(string(metrics), want) {
		t.Fatalf("metrics lack %s", want)
	}
}
