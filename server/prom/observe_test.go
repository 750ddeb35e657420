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
	if n := m.Calls(); n != 5 {
		t.Errorf("Calls: %d, want the 5 observed", n)
	}
}

// The latency histogram puts each request, failed or not, in the bucket
// of its latency, a bound included, and its sum is in seconds.
func TestObserveLatency(t *testing.T) {
	m := prom.New()
	m.Observe("add", 0, 100*time.Microsecond)
	m.Observe("add", peer.CodeTimeout, 101*time.Microsecond)
	m.Observe("add", 0, 40*time.Second)

	rec := httptest.NewRecorder()
	m.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		`switchboard_call_duration_seconds_bucket{method="add",le="0.0001"} 1` + "\n",
		`switchboard_call_duration_seconds_bucket{method="add",le="0.0005"} 2` + "\n",
		`switchboard_call_duration_seconds_bucket{method="add",le="30"} 2` + "\n",
		`switchboard_call_duration_seconds_bucket{method="add",le="+Inf"} 3` + "\n",
		`switchboard_call_duration_seconds_sum{method="add"} 40.000201` + "\n",
		`switchboard_call_duration_seconds_count{method="add"} 3` + "\n",
		`switchboard_calls_total{method="add",outcome="ok"} 2` + "\n",
		`switchboard_calls_total{method="add",outcome="timeout"} 1` + "\n",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
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
