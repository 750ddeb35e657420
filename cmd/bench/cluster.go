package main

import (
	"context"
	"errors"
	"strings"
)

// The cluster scenario is fanout across two nodes of a cluster of hubs:
// the publisher on node A, the subscribers on node B, so that every event
// goes from A through NATS to B; its baseline is the same fan-out with
// the publisher on B too. Its figure is the cost per delivered event: the
// CPU time both hub processes (A runs NATS too) spent from the first
// publish to the last delivery, over the deliveries, in nanoseconds. The
// ratio is cross-node over single-node: at most 2 is the target.

// crossNodeScenario publishes on node A to subscribers on node B.
func crossNodeScenario(ctx context.Context, l *load, _ string) (figure, error) {
	return clusterFanout(ctx, l, l.clusterA)
}

// sameNodeScenario publishes on node B to subscribers on node B.
func sameNodeScenario(ctx context.Context, l *load, _ string) (figure, error) {
	return clusterFanout(ctx, l, l.clusterB)
}

// clusterFanout runs fanout from pubURL to subscribers on node B and
// returns the CPU time per delivery, with the delivery latencies.
func clusterFanout(ctx context.Context, l *load, pubURL string) (figure, error) {
	if l.clusterA == "" {
		return figure{}, errNoCluster
	}
	cpu := func(ctx context.Context) (float64, error) {
		a, err := metric(ctx, metricsURL(l.clusterA), "process_cpu_seconds_total")
		if err != nil {
			return 0, err
		}
		b, err := metric(ctx, metricsURL(l.clusterB), "process_cpu_seconds_total")
		return a + b, err
	}
	f, seconds, err := fanout(ctx, l, pubURL, l.clusterB, cpu)
	if err != nil {
		return f, err
	}
	f.value = seconds * 1e9 / float64(l.subscribers*l.events)
	return f, nil
}

var errNoCluster = errors.New("no cluster: use -start or -cluster A_URL,B_URL")

// parseCluster reads -cluster: two WebSocket URLs.
func parseCluster(s string, l *load) error {
	a, b, ok := strings.Cut(s, ",")
	if !ok || a == "" || b == "" {
		return errors.New("-cluster takes two hub URLs, comma-separated")
	}
	l.clusterA, l.clusterB = a, b
	return nil
}

// startCluster starts two nodes of a cluster, on free loopback ports: A
// runs NATS embedded, B joins it.
func startCluster(ctx context.Context, hubBinary string, l *load) (*servers, error) {
	var addrs [3]string
	for i := range addrs {
		a, err := freeAddr()
		if err != nil {
			return nil, err
		}
		addrs[i] = a
	}
	common := []string{"-demo", "-log-level", "error", "-max-conns", "0", "-max-conns-per-addr", "0"}
	s := &servers{}
	err := s.launch(ctx, [][]string{
		append([]string{hubBinary, "-addr", addrs[0], "-node", "a", "-nats", "embedded", "-nats-listen", addrs[2]}, common...),
		append([]string{hubBinary, "-addr", addrs[1], "-node", "b", "-nats", "nats://" + addrs[2]}, common...),
	}, []string{"http://" + addrs[0] + "/healthz", "http://" + addrs[1] + "/healthz"})
	if err != nil {
		return nil, err
	}
	l.clusterA, l.clusterB = "ws://"+addrs[0]+"/rpc", "ws://"+addrs[1]+"/rpc"
	return s, nil
}
