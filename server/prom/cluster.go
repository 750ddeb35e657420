package prom

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/switchboard-rpc/switchboard/hub"
)

// The counters of a hub in a cluster (hub.ClusterStats), collected with
// the server's own by statsCollector. A hub alone reports none of them.
var (
	descClusterConnected = prometheus.NewDesc("switchboard_cluster_connected",
		"1 while the node can publish to the cluster: linked to NATS and, with JetStream, its stream available; 0 otherwise.", []string{"node"}, nil)
	descClusterEvents = prometheus.NewDesc("switchboard_cluster_events_total",
		`Events between this node and the others, by direction: "sent", "received", "unsent" (the link was down), "lost" (known missed).`, []string{"node", "direction"}, nil)
	descClusterDisconnects = prometheus.NewDesc("switchboard_cluster_disconnects_total",
		"Times the node lost its link to the cluster.", []string{"node"}, nil)
	descClusterResets = prometheus.NewDesc("switchboard_cluster_stream_resets_total",
		"Times the node found its JetStream stream replaced (deleted and created again) and adopted its new epoch.", []string{"node"}, nil)
)

var clusterDescs = []*prometheus.Desc{descClusterConnected, descClusterEvents, descClusterDisconnects, descClusterResets}

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
	ch <- prometheus.MustNewConstMetric(descClusterResets, prometheus.CounterValue, float64(st.Resets), st.Node)
}
