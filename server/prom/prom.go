// Package prom exports a Switchboard server's metrics to Prometheus, so
// that the server package itself depends on no metrics system.
//
// A [Metrics] observes every request served (set its Observe method as
// server.Options.OnServe) and reads the server's counters, [server.Stats],
// at each scrape. It keeps its own registry, with the Go runtime's and
// the process's collectors, and serves it as an http.Handler:
//
//	m := prom.New()
//	srv := server.New(&server.Options{Router: mux, OnServe: m.Observe})
//	m.Watch(srv)
//	http.Handle("/metrics", m)
//
// docs/server.md lists the metrics.
package prom

import (
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/switchboard-rpc/switchboard/peer"
	"github.com/switchboard-rpc/switchboard/server"
)

// Metrics are a server's Prometheus metrics, in a registry of their own.
// Its methods are safe for concurrent use.
type Metrics struct {
	reg     *prometheus.Registry
	handler http.Handler
	calls   *prometheus.CounterVec
	latency *prometheus.HistogramVec

	// methods holds each method's "ok" counter and latency, so that a call
	// served costs a map lookup, not the hashing and locking of
	// WithLabelValues. It is copied on write, once per method.
	methods atomic.Pointer[map[string]methodMetrics]
	mu      sync.Mutex // serializes writers of methods
}

// methodMetrics are the metrics Observe records for one method.
type methodMetrics struct {
	ok      prometheus.Counter
	latency prometheus.Observer
}

// New returns Metrics holding the call counters and latencies that
// Observe records and the Go runtime's and the process's metrics. Call
// Watch to add a server's counters.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchboard_calls_total",
			Help: `Requests served (calls and notifications), by method ("" for an unknown method) and outcome.`,
		}, []string{"method", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "switchboard_call_duration_seconds",
			Help:    "Time handlers took, by method.",
			Buckets: []float64{.0001, .0005, .001, .005, .01, .05, .1, .5, 1, 5, 30},
		}, []string{"method"}),
	}
	m.reg.MustRegister(m.calls, m.latency,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.handler = promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
	return m
}

// Observe records one request served. It has the shape of
// server.Options.OnServe (and peer.Options.OnServe).
func (m *Metrics) Observe(method string, code peer.Code, elapsed time.Duration) {
	if method == "" {
		m.calls.WithLabelValues(method, outcome(code)).Inc()
		return
	}
	mm := m.method(method)
	if code == 0 {
		mm.ok.Inc()
	} else {
		m.calls.WithLabelValues(method, outcome(code)).Inc()
	}
	mm.latency.Observe(elapsed.Seconds())
}

// method returns the metrics of method, adding them on its first call.
func (m *Metrics) method(method string) methodMetrics {
	if p := m.methods.Load(); p != nil {
		if mm, ok := (*p)[method]; ok {
			return mm
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var old map[string]methodMetrics
	if p := m.methods.Load(); p != nil {
		old = *p
	}
	if mm, ok := old[method]; ok {
		return mm
	}
	mm := methodMetrics{
		ok:      m.calls.WithLabelValues(method, outcome(0)),
		latency: m.latency.WithLabelValues(method),
	}
	next := make(map[string]methodMetrics, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	next[method] = mm
	m.methods.Store(&next)
	return mm
}

// Watch adds s's counters ([server.Server.Stats]), read at each scrape.
// Call it once per server.
func (m *Metrics) Watch(s *server.Server) {
	m.reg.MustRegister(statsCollector{s})
}

// ServeHTTP serves the metrics in the Prometheus exposition format.
func (m *Metrics) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.handler.ServeHTTP(w, r)
}

// statsCollector turns one read of a server's Stats into metrics.
type statsCollector struct{ s *server.Server }

var (
	descConnections = prometheus.NewDesc("switchboard_connections", "WebSocket connections open now.", nil, nil)
	descAccepted    = prometheus.NewDesc("switchboard_connections_total", "WebSocket connections accepted.", nil, nil)
	descRejected    = prometheus.NewDesc("switchboard_rejected_total",
		"HTTP requests to /rpc refused before serving, by reason (origin, host, auth, too_large, body_timeout).", []string{"reason"}, nil)
	descPeers         = prometheus.NewDesc("switchboard_peers", "Peers registered in the hub now.", nil, nil)
	descSubscriptions = prometheus.NewDesc("switchboard_subscriptions", "Topic subscriptions now, over all peers.", nil, nil)
	descPublished     = prometheus.NewDesc("switchboard_published_total", "Messages published on topics.", nil, nil)
	descDelivered     = prometheus.NewDesc("switchboard_delivered_total", "Events handed to subscribers.", nil, nil)
	descDropped       = prometheus.NewDesc("switchboard_dropped_total", "Events not delivered because the subscriber was closed or too slow.", nil, nil)
	descSlow          = prometheus.NewDesc("switchboard_slow_consumers_total", "Peers closed with 1008 as too slow: their event queue was full, or they read nothing for -write-stall.", nil, nil)
	descQueued        = prometheus.NewDesc("switchboard_queued_bytes", "Bytes waiting to be written to all WebSocket peers now (bounded by -queue-budget).", nil, nil)
	descLimited       = prometheus.NewDesc("switchboard_limited_total",
		"Messages refused for going over a limit, by limit (message_size, batch, depth, rate, subscriptions, topic_length).", []string{"limit"}, nil)
)

func (statsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descConnections, descAccepted, descRejected,
		descPeers, descSubscriptions, descPublished, descDelivered, descDropped, descSlow, descQueued, descLimited} {
		ch <- d
	}
	for _, d := range append(append(routeDescs, streamDescs...), clusterDescs...) {
		ch <- d
	}
}

func (c statsCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.Stats()
	gauge := func(d *prometheus.Desc, v int) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v))
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge(descConnections, st.Connections)
	counter(descAccepted, st.Accepted)
	for reason, n := range st.Refused {
		counter(descRejected, n, reason)
	}
	gauge(descPeers, st.Hub.Peers)
	gauge(descSubscriptions, st.Hub.Subscriptions)
	counter(descPublished, st.Hub.Published)
	counter(descDelivered, st.Hub.Delivered)
	counter(descDropped, st.Hub.Dropped)
	counter(descSlow, st.Hub.SlowClosed+st.Limited[peer.LimitWriteStall.String()])
	gauge(descQueued, int(st.QueuedBytes))
	collectRoutes(ch, st.Hub.Routes)
	collectStreams(ch, st.Hub.Stream)
	collectCluster(ch, st.Hub.Cluster)
	for limit, n := range st.Limited {
		counter(descLimited, n, limit)
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
	case peer.CodeShuttingDown:
		return "shutting_down"
	}
	if code >= -32768 && code <= -32000 {
		return "server_error"
	}
	return "other_error"
}
