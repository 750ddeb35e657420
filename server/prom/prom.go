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
	calls   calls
}

// New returns Metrics holding the call counters and latencies that
// Observe records and the Go runtime's and the process's metrics. Call
// Watch to add a server's counters.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.reg.MustRegister(&m.calls,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.handler = promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
	return m
}

// Observe records one request served. It has the shape of
// server.Options.OnServe (and peer.Options.OnServe).
func (m *Metrics) Observe(method string, code peer.Code, elapsed time.Duration) {
	m.calls.observe(method, code, elapsed)
}

// Calls returns the requests Observe has counted, of every method and
// outcome: the sum of switchboard_calls_total. It reads the counters the
// calls already add to, and adds nothing to a call. Give it to
// hub.Options.Calls, for the admin API (admin.info).
func (m *Metrics) Calls() uint64 { return m.calls.total() }

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
