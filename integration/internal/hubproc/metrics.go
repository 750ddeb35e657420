package hubproc

import (
	"bufio"
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Metrics reads the hub's /metrics: every sample by its name, labelled
// ones with their labels (`switchboard_forwarded_total{method="add"}`).
// A failure fails the test.
func (h *Hub) Metrics() map[string]float64 {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, h.URL()+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatalf("hubproc: GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	m := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") {
			continue
		}
		if v, err := strconv.ParseFloat(value, 64); err == nil {
			m[name] = v
		}
	}
	return m
}

// WaitMetrics reads the hub's metrics until ok accepts them, for up to
// 30 s, and returns them; then it fails the test, saying what it waited
// for and where the hub stood.
func (h *Hub) WaitMetrics(what string, ok func(map[string]float64) bool) map[string]float64 {
	h.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		m := h.Metrics()
		if ok(m) {
			return m
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("hub metrics: still not %s after 30s: connections %v, peers %v, subscriptions %v, goroutines %v, heap %.1f MiB",
				what, m["switchboard_connections"], m["switchboard_peers"], m["switchboard_subscriptions"],
				m["go_goroutines"], m["go_memstats_heap_inuse_bytes"]/(1<<20))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Baseline is what an idle hub holds.
type Baseline struct {
	Goroutines float64 // go_goroutines
	Heap       float64 // go_memstats_heap_inuse_bytes
}

// Baseline waits until the hub has no connections, then takes its
// baseline.
func (h *Hub) Baseline() Baseline {
	h.t.Helper()
	m := h.WaitMetrics("idle", func(m map[string]float64) bool {
		return m["switchboard_connections"] == 0
	})
	return Baseline{Goroutines: m["go_goroutines"], Heap: m["go_memstats_heap_inuse_bytes"]}
}
