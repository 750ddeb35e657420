package main

import (
	"bytes"
	"context"
	"fmt"
	"time"
)

// This file holds the scale command's "beside" part: the cluster with as
// many peers as the single hub had, and the same events, so that what a
// delivery costs on the cluster compares with what it costs on one hub;
// and its section of the page.

// besideTarget is the most a delivery may cost on the cluster, above
// idle, for the same peers and deliveries on this machine, as a multiple
// of what it costs on one hub: the cluster's extra work is one message
// per node per event, nothing per subscriber.
const besideTarget = 1.3

// scaleBeside runs the cluster part's fan-out, without the restart, with
// the single hub's peers from one swarm.
func scaleBeside(ctx context.Context, c *scaleConfig, peers, room int) (*clusterResult, error) {
	bc := *c
	bc.restart = false
	logf("beside: %d peers over %d hubs, as many as the single hub had", peers, c.nodes)
	return scaleCluster(ctx, &bc, peers, 1, room)
}

// writeBeside writes the section that sets the cluster's cost per
// delivery beside one hub's.
func writeBeside(b *bytes.Buffer, s *singleResult, c *clusterResult) {
	if s == nil || c == nil {
		return
	}
	ratio := c.Fanout.deliveryCost() / s.Fanout.deliveryCost()
	fmt.Fprintf(b, `
## The cluster beside one hub

The same %s peers, from one process of the load generator, over %d hubs joined over
NATS with JetStream (as below, without the restart), and the same %d events
published to all: what a delivery costs the cluster against what it costs one hub.
An event crosses NATS once per node, and each node fans it out to its own
subscribers as one hub does, so the two should cost the same per delivery. The
load generator and whatever else ran took the same two cores meanwhile: their CPU
time per delivery is beside the hubs'.

| figure | one hub | %d hubs | ratio | target |
| --- | ---: | ---: | ---: | --- |
| CPU per delivery, above idle (all hubs) | %.2f µs | %.2f µs | %.2f | ≤ %.1f %s |
| CPU per delivery, in all, hub by hub | %s | %s | | |
| the load generator's CPU per delivery | %.2f µs | %.2f µs | | |
| the machine's other work per delivery meanwhile (not the hubs, not the load generator) | %.2f µs | %.2f µs | | |
| fan-out of one event to all: deliveries/s (median event) | %s | %s | | |
| delivery latency, publish to peer: p50, p99 | %s, %s | %s, %s | | |
| a subscription: the hubs' CPU above idle, and the time until they were idle again | %s | %s | | |

Before the events, each peer subscribed, and the hubs were left until they were
back at their idle CPU rate: on the cluster, each subscription is told to every
other node (presence, for rpc.join and rpc.presence), and the nodes take those
messages in after the subscribers have their answers. Measured during the
fan-out, that work would count as the deliveries'.
`, human(float64(s.Peers)), c.Nodes, c.Fanout.Events, c.Nodes,
		s.Fanout.deliveryCost(), c.Fanout.deliveryCost(), ratio, besideTarget, verdict(ratio <= besideTarget),
		microsList(s.Fanout.NodeCPUPerDelivery), microsList(c.Fanout.NodeCPUPerDelivery),
		s.Fanout.LoadCPUPerDelivery, c.Fanout.LoadCPUPerDelivery,
		s.Fanout.OtherCPUPerDelivery, c.Fanout.OtherCPUPerDelivery,
		human(s.Fanout.DeliveriesPerSec), human(c.Fanout.DeliveriesPerSec),
		micros(s.Fanout.P50), micros(s.Fanout.P99), micros(c.Fanout.P50), micros(c.Fanout.P99),
		subscribeText(s.Subscribe), subscribeText(c.Subscribe))
}

func subscribeText(r subscribeResult) string {
	t := fmt.Sprintf("%.1f µs, %.1f s", r.CPUPerSubscription, r.Seconds)
	if !r.Quiet {
		t += " (not idle yet)"
	}
	return t
}

// microsList formats CPU times per delivery, one per hub.
func microsList(v []float64) string {
	var b bytes.Buffer
	for i, x := range v {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%.2f", x)
	}
	if b.Len() == 0 {
		return "-"
	}
	return b.String() + " µs"
}

// subscribeResult is what the peers' subscriptions cost the hubs. In a
// cluster, each subscription is told to every other node (presence), which
// takes it in after the subscriber has its answer: the hubs are busy with
// it for a while after the last answer, and a fan-out measured meanwhile
// would count that work as the deliveries'.
type subscribeResult struct {
	// Seconds is how long from the first subscription until the hubs
	// were back at their idle CPU rate (or quietWait, if never).
	Seconds float64 `json:"seconds"`
	Quiet   bool    `json:"quiet"` // they were, within quietWait
	// CPUPerSubscription is the hubs' CPU time meanwhile, above idle, per
	// subscription, in µs.
	CPUPerSubscription float64 `json:"cpuUsPerSubscription"`
}

// quietWait bounds how long subscribeQuiet waits for the hubs to be back
// at their idle CPU rate.
const quietWait = 2 * time.Minute

// subscribeQuiet has every peer of ss subscribe, then waits until the
// hubs' CPU rate over a second is back near idle (µs per second, all
// hubs): twice that, and 2% of a core.
func subscribeQuiet(ss swarms, pids []int, idle float64) (subscribeResult, error) {
	var r subscribeResult
	sum := func() (time.Duration, error) {
		t, err := cpuTimes(pids)
		var s time.Duration
		for _, d := range t {
			s += d
		}
		return s, err
	}
	start := time.Now()
	cpu0, err := sum()
	if err != nil {
		return r, err
	}
	if err := ss.subscribe(); err != nil {
		return r, err
	}
	last, lastT := cpu0, time.Now()
	for time.Since(start) < quietWait {
		time.Sleep(time.Second)
		cpu, err := sum()
		if err != nil {
			return r, err
		}
		now := time.Now()
		rate := float64((cpu - last).Microseconds()) / now.Sub(lastT).Seconds()
		last, lastT = cpu, now
		if rate <= 2*idle+2e4 {
			r.Quiet = true
			break
		}
	}
	r.Seconds = lastT.Sub(start).Seconds()
	used := float64((last - cpu0).Microseconds()) - idle*r.Seconds
	r.CPUPerSubscription = max(used, 0) / float64(max(ss.peers(), 1))
	return r, nil
}
