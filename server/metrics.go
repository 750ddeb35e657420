package server

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/switchboard-rpc/switchboard/peer"
)

// metrics are the server's Prometheus metrics, in a registry of its own.
type metrics struct {
	reg         *prometheus.Registry
	connections prometheus.Counter
	calls       *prometheus.CounterVec
	latency     *prometheus.HistogramVec
	rejected    *prometheus.CounterVec
}

func newMetrics(s *Server) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		connections: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "switchboard_connections_total",
			Help: "WebSocket connections accepted.",
		}),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchboard_calls_total",
			Help: `Requests served (calls and notifications), by method ("" for an unknown method) and outcome.`,
		}, []string{"method", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "switchboard_call_duration_seconds",
			Help:    "Time handlers took, by method.",
			Buckets: []float64{.0001, .0005, .001, .005, .01, .05, .1, .5, 1, 5, 30},
		}, []string{"method"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchboard_rejected_total",
			Help: "HTTP requests to /rpc refused before serving, by reason (origin, host, auth, too_large, body_timeout).",
		}, []string{"reason"}),
	}
	stat := func(name, help string, f func() float64, gauge bool) prometheus.Collector {
		if gauge {
			return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
		}
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, f)
	}
	h := s.hub
	m.reg.MustRegister(
		m.connections, m.calls, m.latency, m.rejected,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		stat("switchboard_connections", "WebSocket connections open now.", func() float64 {
			s.mu.Lock()
			defer s.mu.Unlock()
			return float64(len(s.conns))
		}, true),
		stat("switchboard_peers", "Peers registered in the hub now.", func() float64 { return float64(h.Stats().Peers) }, true),
		stat("switchboard_subscriptions", "Topic subscriptions now, over all peers.", func() float64 { return float64(h.Stats().Subscriptions) }, true),
		stat("switchboard_published_total", "Messages published on topics.", func() float64 { return float64(h.Stats().Published) }, false),
		stat("switchboard_delivered_total", "Events handed to subscribers.", func() float64 { return float64(h.Stats().Delivered) }, false),
		stat("switchboard_dropped_total", "Events not delivered because the subscriber was closed or too slow.", func() float64 { return float64(h.Stats().Dropped) }, false),
		stat("switchboard_slow_consumers_total", "Subscribers closed with 1008 because their event queue was full.", func() float64 { return float64(h.Stats().SlowClosed) }, false),
	)
	return m
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// observe is the peer.Options.OnServe hook.
func (m *metrics) observe(method string, code peer.Code, elapsed time.Duration) {
	m.calls.WithLabelValues(method, outcome(code)).Inc()
	if method != "" {
		m.latency.WithLabelValues(method).Observe(elapsed.Seconds())
	}
}

// outcome names a reply's code for the outcome label; codes an
// application chose itself are lumped together to bound the label's values.
func outcome(code peer.Code) string {
	switch code {
	case 0:
		return "ok"
	case peer.CodeParseError:
		return "parse_error"
	case peer.CodeInvalidRequest:
		return "invalid_request"
	case peer.CodeMethodNotFound:
		return "method_not_found"
	case peer.CodeInvalidParams:
		return "invalid_params"
	case peer.CodeInternalError:
		return "internal_error"
	case peer.CodeApplication:
		return "application_error"
	case peer.CodeUnauthorized:
		return "unauthorized"
	case peer.CodeCancelled:
		return "cancelled"
	case peer.CodeTimeout:
		return "timeout"
	case peer.CodeOverloaded:
		return "overloaded"
	}
	if code >= -32768 && code <= -32000 {
		return "server_error"
	}
	return "other_error"
}
