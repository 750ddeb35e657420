package prom

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/switchboard-rpc/switchboard/hub"
)

// The counters of forwarded calls (hub.RouteStats), collected with the
// server's own by statsCollector.
var (
	descProviders = prometheus.NewDesc("switchboard_providers",
		"Peers providing methods to the others now.", nil, nil)
	descForwardsInFlight = prometheus.NewDesc("switchboard_forwards_in_flight",
		"Forwarded and addressed calls waiting for their peer's answer now.", nil, nil)
	descForwarded = prometheus.NewDesc("switchboard_forwarded_total",
		`Calls and notifications forwarded to a providing peer, by method (after 1,000 methods, the rest as "(other)").`, []string{"method"}, nil)
	descProviderLost = prometheus.NewDesc("switchboard_provider_lost_total",
		"Forwarded and addressed calls answered -32006: their peer disconnected first.", nil, nil)
	descAddressed = prometheus.NewDesc("switchboard_addressed_total",
		"Calls and notifications rpc.call sent to the peers it addressed, one per peer.", nil, nil)
)

var routeDescs = []*prometheus.Desc{descProviders, descForwardsInFlight, descForwarded, descProviderLost, descAddressed}

func collectRoutes(ch chan<- prometheus.Metric, st hub.RouteStats) {
	ch <- prometheus.MustNewConstMetric(descProviders, prometheus.GaugeValue, float64(st.Providers))
	ch <- prometheus.MustNewConstMetric(descForwardsInFlight, prometheus.GaugeValue, float64(st.InFlight))
	for method, n := range st.Forwarded {
		ch <- prometheus.MustNewConstMetric(descForwarded, prometheus.CounterValue, float64(n), method)
	}
	ch <- prometheus.MustNewConstMetric(descProviderLost, prometheus.CounterValue, float64(st.ProviderLost))
	ch <- prometheus.MustNewConstMetric(descAddressed, prometheus.CounterValue, float64(st.Addressed))
}
