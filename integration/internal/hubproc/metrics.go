package hubproc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Metrics reads the hub's /metrics (on its admin address, with
// Options.Admin): every sample by its name, labelled ones with their
// labels (`switchboard_forwarded_total{method="add"}`). A failure fails
// the test.
func (h *Hub) Metrics() map[string]float64 {
	h.t.Helper()
	url := h.URL() + "/metrics"
	if h.admin != "" {
		url = "http://" + h.admin + "/metrics"
	}
	m := map[string]float64{}
	for line := range strings.Lines(string(h.get(url))) {
		name, value, ok := strings.Cut(strings.TrimSpace(line), " ")
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
	return h.waitMetrics(func() string { return what }, ok)
}

// waitMetrics is WaitMetrics, asking what only if it fails.
func (h *Hub) waitMetrics(what func() string, ok func(map[string]float64) bool) map[string]float64 {
	h.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		m := h.Metrics()
		if ok(m) {
			return m
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("hub metrics: still not %s after 30s: connections %v, peers %v, subscriptions %v, goroutines %v, heap %.1f MiB",
				what(), m["switchboard_connections"], m["switchboard_peers"], m["switchboard_subscriptions"],
				m["go_goroutines"], m["go_memstats_heap_inuse_bytes"]/(1<<20))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// get returns the body of a GET of url, within 10 s; a failure or a
// status other than 200 fails the test.
func (h *Hub) get(url string) []byte {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatalf("hubproc: GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = errors.New(resp.Status)
	}
	if err != nil {
		h.t.Fatalf("hubproc: GET %s: %v", url, err)
	}
	return b
}

// HeapAfterGC returns the bytes of the hub's heap in use right after a
// collection, which its heap profile (gc=1) runs first. The hub must have
// been started with Options.Admin. A failure fails the test.
func (h *Hub) HeapAfterGC() float64 {
	h.t.Helper()
	if h.admin == "" {
		h.t.Fatal("hubproc: HeapAfterGC needs a hub started with Options.Admin")
	}
	for line := range strings.Lines(string(h.get("http://" + h.admin + "/debug/pprof/heap?gc=1&debug=1"))) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "# HeapInuse = "); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				h.t.Fatalf("hubproc: the heap profile's HeapInuse: %v", err)
			}
			return n
		}
	}
	h.t.Fatal("hubproc: no HeapInuse in the heap profile")
	return 0
}

// Baseline is what an idle hub holds.
type Baseline struct {
	Goroutines float64 // go_goroutines
	Heap       float64 // HeapAfterGC
}

// Baseline waits until the hub has no connections, then takes its
// baseline. The hub must have been started with Options.Admin.
func (h *Hub) Baseline() Baseline {
	h.t.Helper()
	m := h.WaitMetrics("idle", func(m map[string]float64) bool {
		return m["switchboard_connections"] == 0
	})
	return Baseline{Goroutines: m["go_goroutines"], Heap: h.HeapAfterGC()}
}

// WaitRecovered waits, as WaitMetrics does, until the hub is back to
// base and ok (if not nil) accepts its metrics: no connections and no
// subscriptions, at most two goroutines more, and after a collection a
// heap within half of it and 4 MiB more. A heap that stays above that
// holds something it should have let go.
func (h *Hub) WaitRecovered(base Baseline, ok func(map[string]float64) bool) {
	h.t.Helper()
	bound := base.Heap*1.5 + 4<<20
	heap := 0.0
	h.waitMetrics(func() string {
		return fmt.Sprintf("back to the baseline (heap after a collection %.1f MiB, bound %.1f MiB)", heap/(1<<20), bound/(1<<20))
	}, func(m map[string]float64) bool {
		if m["switchboard_connections"] != 0 || m["switchboard_subscriptions"] != 0 ||
			m["go_goroutines"] > base.Goroutines+2 || (ok != nil && !ok(m)) {
			return false
		}
		heap = h.HeapAfterGC()
		return heap <= bound
	})
}
