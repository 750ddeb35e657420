package deploy_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/integration/internal/hubproc"
)

// TestProbesByAddress: the recommended production settings (-hosts with
// the hub's public name, -metrics-addr on a private address) leave what
// reaches the hub by address working: the harness's own health probe,
// which asks http://127.0.0.1:port/healthz as a Kubernetes httpGet probe
// asks the pod's IP, /readyz, and the metrics scrape by address; while a
// page under another name still reads nothing.
func TestProbesByAddress(t *testing.T) {
	config, _ := deployed(t)
	h := hubproc.Start(t, &hubproc.Options{Args: []string{"-config", config, "-hosts", "hub.example.com"}, Admin: true})
	if got, _ := get(t, h.URL()+"/readyz", ""); got != 200 {
		t.Errorf("/readyz by address: %d, want 200", got)
	}
	if m := h.Metrics(); m["switchboard_connections"] != 0 || len(m) == 0 {
		t.Errorf("the scrape by address found no metrics: %v", m)
	}
	for _, tt := range []struct {
		host string
		want int
	}{
		{"evil.example", 403},    // a re-bound name: not the app
		{"127.0.0.1", 403},       // -hosts names the hub: / by address is not served
		{"hub.example.com", 200}, // the playground, by its name
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, h.URL()+"/", nil)
		req.Host = tt.host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		cancel()
		if resp.StatusCode != tt.want {
			t.Errorf("GET / with Host %s: %d, want %d", tt.host, resp.StatusCode, tt.want)
		}
	}
}
