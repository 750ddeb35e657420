package prom_test

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/peer"
	"github.com/switchboard-rpc/switchboard/server/prom"
)

// Observe counts each request by method and outcome, and records the
// latency of each known method.
func TestObserve(t *testing.T) {
	m := prom.New()
	m.Observe("add", 0, time.Millisecond)
	m.Observe("add", 0, time.Millisecond)
	m.Observe("add", peer.CodeInvalidParams, time.Millisecond)
	m.Observe("echo", 0, time.Millisecond)
	m.Observe("", peer.CodeMethodNotFound, 0)

	rec := httptest.NewRecorder()
	m.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		`switchboard_calls_total{method="add",outcome="ok"} 2`,
		`switchboard_calls_total{method="add",outcome="invalid_params"} 1`,
		`switchboard_calls_total{method="echo",outcome="ok"} 1`,
		`switchboard_calls_total{method="",outcome="method_not_found"} 1`,
		`switchboard_call_duration_seconds_count{method="add"} 3`,
		`switchboard_call_duration_seconds_count{method="echo"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(body, `switchboard_call_duration_seconds_count{method=""}`) {
		t.Error("latency recorded for unknown methods")
	}
}

// BenchmarkObserve measures the metrics of one call served.
func BenchmarkObserve(b *testing.B) {
	m := prom.New()
	methods := []string{"add", "echo", "sleep", "publish"}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		m.Observe(methods[i%len(methods)], 0, 50*time.Microsecond)
		i++
	}
}
