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

// The cluster-js scenario is the same over two nodes with JetStream: an
// event goes from the publisher's node to the stream, and from the stream
// to every node, the publisher's too; its baseline publishes on node B.

// crossNodeScenario publishes on node A to subscribers on node B.
func crossNodeScenario(ctx context.Context, l *load, _ string) (figure, error) {
	return clusterFanout(ctx, l, l.clusterA, l.clusterB, l.clusterA)
}

// sameNodeScenario publishes on node B to subscribers on node B.
func sameNodeScenario(ctx context.Context, l *load, _ string) (figure, error) {
	return clusterFanout(ctx, l, l.clusterA, l.clusterB, l.clusterB)
}

// crossNodeJSScenario is crossNodeScenario with JetStream.
func crossNodeJSScenario(ctx context.Context, l *load, _ string) (figure, error) {
	return clusterFanout(ctx, l, l.jsA, l.jsB, l.jsA)
}

// sameNodeJSScenario is sameNodeScenario with JetStream.
func sameNodeJSScenario(ctx context.Context, l *load, _ string) (figure, error) {
	return clusterFanout(ctx, l, l.jsA, l.jsB, l.jsB)
}

// clusterFanout runs fanout from pubURL to subscribers on node b and
// returns the CPU time per delivery of nodes a and b, with the delivery
// latencies.
func clusterFanout(ctx context.Context, l *load, a, b, pubURL string) (figure, error) {
	if a == "" {
		return figure{}, errNoCluster
	}
	cpu := func(ctx context.Context) (float64, error) {
		x, err := metric(ctx, metricsURL(a), "process_cpu_seconds_total")
		if err != nil {
			return 0, err
		}
		y, err := metric(ctx, metricsURL(b), "process_cpu_seconds_total")
		return x + y, err
	}
	f, seconds, err := fanout(ctx, l, pubURL, b, cpu)
	if err != nil {
		return f, err
	}
	f.value = seconds * 1e9 / float64(l.subscribers*l.events)
	return f, nil
}

var errNoCluster = errors.New("no cluster: use -start, or -cluster (-cluster-js) A_URL,B_URL")

// parseCluster reads -cluster (-cluster-js): two WebSocket URLs.
func parseCluster(s string, a, b *string) error {
	x, y, ok := strings.Cut(s, ",")
	if !ok || x == "" || y == "" {
		return errors.New("-cluster and -cluster-js take two hub URLs, comma-separated")
	}
	*a, *b = x, y
	return nil
}

// startCluster starts two nodes of a cluster, on free loopback ports: A
// runs NATS embedded, B joins it; with jetStream, they keep events in a
// JetStream stream (in the embedded server's temporary directory).
func startCluster(ctx context.Context, hubBinary string, l *load, jetStream bool) (*servers, error) {
	var addrs [3]string
	for i := range addrs {
		a, err := freeAddr()
		if err != nil {
			return nil, err
		}
		addrs[i] = a
	}
	common := []string{"-demo", "-log-level", "error", "-max-conns", "0", "-max-conns-per-addr", "0"}
	if jetStream {
		common = append(common, "-nats-jetstream")
	}
	s := &servers{}
	err := s.launch(ctx, [][]string{
		append([]string{hubBinary, "-addr", addrs[0], "-node", "a", "-nats", "embedded", "-nats-listen", addrs[2]}, common...),
		append([]string{hubBinary, "-addr", addrs[1], "-node", "b", "-nats", "nats://" + addrs[2]}, common...),
	}, []string{"http://" + addrs[0] + "/readyz", "http://" + addrs[1] + "/readyz"}, readyWait)
	if err != nil {
		return nil, err
	}
	a, b := "ws://"+addrs[0]+"/rpc", "ws://"+addrs[1]+"/rpc"
	if jetStream {
		l.jsA, l.jsB = a, b
	} else {
		l.clusterA, l.clusterB = a, b
	}
	return s, nil
}
