package prom

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/switchboard-rpc/switchboard/hub"
)

// The counters of a hub in a cluster (hub.ClusterStats), collected with
// the server's own by statsCollector. A hub alone reports none of them.
var (
	descClusterConnected = prometheus.NewDesc("switchboard_cluster_connected",
		"1 while the node is linked to the cluster (NATS), 0 while it delivers its own events only.", []string{"node"}, nil)
	descClusterEvents = prometheus.NewDesc("switchboard_cluster_events_total",
		`Events between this node and the others, by direction: "sent", "received", "unsent" (the link was down), "lost" (known missed).`, []string{"node", "direction"}, nil)
	descClusterDisconnects = prometheus.NewDesc("switchboard_cluster_disconnects_total",
		"Times the node lost its link to the cluster.", []string{"node"}, nil)
)

var clusterDescs = []*prometheus.Desc{descClusterConnected, descClusterEvents, descClusterDisconnects}

func collectCluster(ch chan<- prometheus.Metric, st hub.ClusterStats) {
	if st.Node == "" {
		return
	}
	up := 0.0
	if st.Connected {
		up = 1
	}
	ch <- prometheus.MustNewConstMetric(descClusterConnected, prometheus.GaugeValue, up, st.Node)
	for dir, n := range map[string]uint64{"sent": st.Sent, "received": st.Received, "unsent": st.Unsent, "lost": st.Lost} {
		ch <- prometheus.MustNewConstMetric(descClusterEvents, prometheus.CounterValue, float64(n), st.Node, dir)
	}
	ch <- prometheus.MustNewConstMetric(descClusterDisconnects, prometheus.CounterValue, float64(st.Disconnects), st.Node)
}
