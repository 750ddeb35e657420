package prom

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/switchboard-rpc/switchboard/server"
)

// WatchListener adds l's counters ([server.Listener.Stats]), read at each
// scrape: the connections open on it, and those refused by limit. Call it
// once per listener.
func (m *Metrics) WatchListener(l *server.Listener) {
	m.reg.MustRegister(listenerCollector{l})
}

type listenerCollector struct{ l *server.Listener }

var (
	descOpen = prometheus.NewDesc("switchboard_listener_connections",
		"TCP connections open on the listener now, WebSockets and HTTP alike.", nil, nil)
	descListenerRefused = prometheus.NewDesc("switchboard_listener_refused_total",
		"Connections the listener refused with 503, by the limit they were over (max_conns, max_conns_per_addr).", []string{"limit"}, nil)
)

func (listenerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descOpen
	ch <- descListenerRefused
}

func (c listenerCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.l.Stats()
	ch <- prometheus.MustNewConstMetric(descOpen, prometheus.GaugeValue, float64(st.Open))
	for limit, n := range st.Refused {
		ch <- prometheus.MustNewConstMetric(descListenerRefused, prometheus.CounterValue, float64(n), limit)
	}
}
