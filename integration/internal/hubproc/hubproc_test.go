package hubproc_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/switchboard-rpc/switchboard/integration/internal/hubproc"
)

func TestMain(m *testing.M) { hubproc.Main(m) }

func add(t *testing.T, h *hubproc.Hub) string {
	t.Helper()
	resp, err := http.Post(h.URL()+"/rpc", "application/json", strings.NewReader(`{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func TestStartStopRestart(t *testing.T) {
	h := hubproc.Start(t, &hubproc.Options{Args: []string{"-demo"}})
	if got := add(t, h); got != `{"jsonrpc":"2.0","id":1,"result":3}` {
		t.Fatalf("add: %s", got)
	}
	addr := h.Addr()
	if err := h.Stop(); err != nil {
		t.Fatalf("Stop: %v (a hub stopped with SIGTERM exits 0)", err)
	}
	if h.Running() {
		t.Fatal("running after Stop")
	}
	h.Restart()
	if h.Addr() != addr || !h.Running() {
		t.Fatalf("restarted on %s (running %v), want %s", h.Addr(), h.Running(), addr)
	}
	if got := add(t, h); !strings.Contains(got, `"result":3`) {
		t.Fatalf("add after restart: %s", got)
	}
	if n := strings.Count(h.Log(), "hub listening"); n != 2 {
		t.Fatalf("log shows %d starts, want 2:\n%s", n, h.Log())
	}
	h.Kill()
	if h.Running() {
		t.Fatal("running after Kill")
	}
	if _, err := http.Get(h.URL() + "/healthz"); err == nil {
		t.Fatal("a killed hub still answers")
	}
}

// A hub with an admin address serves its metrics and profiles there, on
// the same address after a restart, and not on its main address.
func TestAdmin(t *testing.T) {
	h := hubproc.StartDemo(t)
	base := h.Baseline()
	if base.Heap <= 0 || base.Goroutines <= 0 {
		t.Fatalf("baseline %+v", base)
	}
	if got := add(t, h); got != `{"jsonrpc":"2.0","id":1,"result":3}` {
		t.Fatalf("add: %s", got)
	}
	if m := h.Metrics(); m[`switchboard_calls_total{method="add",outcome="ok"}`] != 1 {
		t.Fatalf("metrics count %v calls of add, want 1", m[`switchboard_calls_total{method="add",outcome="ok"}`])
	}
	resp, err := http.Get(h.URL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("GET /metrics on the main address: %s, want 404", resp.Status)
	}
	h.Restart()
	if m := h.Metrics(); m[`switchboard_calls_total{method="add",outcome="ok"}`] != 0 {
		t.Fatal("the restarted hub's metrics count the calls of the last")
	}
	h.WaitRecovered(base, nil)
}
