package prom

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/switchboard-rpc/switchboard/hub"
)

// The counters of the event stream (hub.StreamStats): what the history
// holds and what recoveries did, collected with the server's own by
// statsCollector.
var (
	descHistoryEvents = prometheus.NewDesc("switchboard_history_events",
		"Events the history holds now.", nil, nil)
	descHistoryBytes = prometheus.NewDesc("switchboard_history_bytes",
		"Estimated memory of the events the history holds, as counted against its bounds.", nil, nil)
	descHistoryTopics = prometheus.NewDesc("switchboard_history_topics",
		"Topics with events in the history now.", nil, nil)
	descEvicted = prometheus.NewDesc("switchboard_history_evicted_total",
		"Events the history dropped to stay within its bounds (count, age, bytes).", nil, nil)
	descRecoveries = prometheus.NewDesc("switchboard_recoveries_total",
		`Subscriptions resumed from a position, by outcome: "complete" (every event since it) or "incomplete".`, []string{"outcome"}, nil)
	descReplayed = prometheus.NewDesc("switchboard_replayed_total",
		"Events sent by replays of resumed subscriptions.", nil, nil)
)

var streamDescs = []*prometheus.Desc{descHistoryEvents, descHistoryBytes, descHistoryTopics, descEvicted, descRecoveries, descReplayed}

func collectStreams(ch chan<- prometheus.Metric, st hub.StreamStats) {
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v)
	}
	gauge(descHistoryEvents, float64(st.Events))
	gauge(descHistoryBytes, float64(st.Bytes))
	gauge(descHistoryTopics, float64(st.Topics))
	ch <- prometheus.MustNewConstMetric(descEvicted, prometheus.CounterValue, float64(st.Evicted))
	ch <- prometheus.MustNewConstMetric(descRecoveries, prometheus.CounterValue, float64(st.Recovered), "complete")
	ch <- prometheus.MustNewConstMetric(descRecoveries, prometheus.CounterValue, float64(st.Unrecovered+st.Lost), "incomplete")
	ch <- prometheus.MustNewConstMetric(descReplayed, prometheus.CounterValue, float64(st.Replayed))
}
