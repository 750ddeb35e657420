package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"time"
)

// scaleSingle measures one hub holding n peers, and the floor's idle
// memory at the same count.
func scaleSingle(ctx context.Context, c *scaleConfig, n int) (*singleResult, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	hubAddr, floorAddr, err := hubAndFloorAddrs()
	if err != nil {
		return nil, err
	}
	s := &servers{}
	// Default pings; no connection limits: every peer comes from one address.
	err = s.launch(ctx, [][]string{
		{c.hub, "-addr", hubAddr, "-demo", "-log-level", "error", "-max-conns", "0", "-max-conns-per-addr", "0"},
		{self, "floor", "-addr", floorAddr},
	}, []string{"http://" + hubAddr + "/healthz", "http://" + floorAddr + "/metrics"}, startWait)
	if err != nil {
		return nil, err
	}
	defer s.stop()
	hubURL, floorURL := "ws://"+hubAddr+"/rpc", "ws://"+floorAddr+"/"
	pids := []int{s.procs[0].pid()}
	r := &singleResult{Peers: n, IdleSeconds: c.idle.Seconds()}

	pub, err := dialControl(ctx, hubURL) // before the peers, as in the cluster
	if err != nil {
		return nil, err
	}
	defer pub.close()
	logf("single: %d peers to one hub", n)
	nodes, err := readNodes(ctx, []string{hubURL}, pids)
	if err != nil {
		return nil, err
	}
	r.RSSBefore = nodes[0].rss
	ss, secs, err := launchSwarms(n, 1, []string{hubURL}, c.dialers)
	if err != nil {
		return nil, err
	}
	defer ss.stop()
	r.ConnectSeconds = secs
	logf("single: connected in %.1f s; idle for %v", secs, c.idle)
	idle, err := measureIdle(ctx, c, []string{hubURL}, pids)
	if err != nil {
		return nil, err
	}
	r.RSSIdle = idle.after[0].rss
	r.RSSPerPeer = float64(idle.after[0].rss-nodes[0].rss) / float64(n)
	r.GoroutinesPerPeer = float64(idle.after[0].goroutines-nodes[0].goroutines) / float64(n)
	r.IdleCPUPerPeer = idle.cpuPerPeerSecond(n)

	if r.Subscribe, err = subscribeQuiet(ss, pids, idle.cpuPerSecond()); err != nil {
		return nil, err
	}
	logf("single: fan-out of %d events", c.events)
	if r.Fanout, err = fanoutAll(ss, pub, pids, c.events, idle.cpuPerSecond()); err != nil {
		return nil, err
	}
	if r.RSSPeak, err = residentOfPID(pids[0]); err != nil {
		return nil, err
	}
	pub.close()
	t := time.Now()
	ss.stop()
	logf("single: the peers left in %.1f s", time.Since(t).Seconds())
	// The memory returned: once the hub has closed every connection, and
	// its collector and scavenger have had the time to give back.
	if err := waitMetric(ctx, hubURL, "switchboard_connections", 0, time.Minute); err != nil {
		return nil, err
	}
	left := time.Now()
	if r.RSSAfter, err = residentOfPID(pids[0]); err != nil {
		return nil, err
	}
	// Go collects garbage when the program allocates, or every two minutes
	// when it does not, and gives memory back to the system after that:
	// read until nine tenths of what the peers took is back, or c.returned.
	for time.Since(left) < c.returned && r.RSSAfter > r.RSSBefore+(r.RSSPeak-r.RSSBefore)/10 {
		time.Sleep(min(time.Second, c.returned))
		if r.RSSAfter, err = residentOfPID(pids[0]); err != nil {
			return nil, err
		}
	}
	r.ReturnedSeconds = time.Since(left).Seconds()
	// The connections' goroutines end just after they are counted out:
	// they are given a little while to, not more.
	_ = waitMetricAtMost(ctx, hubURL, "go_goroutines", float64(nodes[0].goroutines), 10*time.Second)
	if r.Left, err = readLeft(ctx, hubURL, left); err != nil {
		return nil, err
	}
	r.Left.GoroutinesBefore = nodes[0].goroutines
	logf("single: %s resident %.0f s after the peers left; %d goroutines (%d before), heap in use %s, freed but kept %s",
		mb(r.RSSAfter), r.ReturnedSeconds, r.Left.Goroutines, r.Left.GoroutinesBefore, mb(r.Left.HeapInuse), mb(r.Left.HeapKept))

	logf("single: %d connections to the floor", n)
	floorPID := s.procs[1].pid()
	before, err := residentOfPID(floorPID)
	if err != nil {
		return nil, err
	}
	fs, _, err := launchSwarms(n, 1, []string{floorURL}, c.dialers)
	if err != nil {
		return nil, err
	}
	defer fs.stop()
	time.Sleep(c.settle)
	after, err := residentOfPID(floorPID)
	if err != nil {
		return nil, err
	}
	r.FloorRSSPerPeer = float64(after-before) / float64(n)
	return r, nil
}

// scaleCluster measures nodes hubs joined over NATS with JetStream
// holding n peers from count swarms, and a restart of the last node.
func scaleCluster(ctx context.Context, c *scaleConfig, n, count, room int) (*clusterResult, error) {
	natsAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	// Each node refuses (503) peers beyond its file descriptors, so that a
	// peer whose node restarts is turned away at once by a full one. The 50
	// places over a node's share of the peers are for the publisher (on the
	// first), the load generator's /metrics requests (one at a time, each
	// closed once answered) and peers of another node. A node
	// opens its JetStream stream before it listens: under load that takes
	// longer than the default 10 s, so it may take as long as it is waited
	// for (readyWait), and it is waited for on /readyz.
	common := []string{"-demo", "-log-level", "error", "-max-conns", strconv.Itoa(room + 50), "-max-conns-per-addr", "0",
		"-nats-jetstream", "-nats-timeout", readyWait.String()}
	var argvs [][]string
	var urls, health []string
	for i := range c.nodes {
		addr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		argv := []string{c.hub, "-addr", addr, "-node", fmt.Sprintf("node%d", i+1)}
		if i == 0 {
			argv = append(argv, "-nats", "embedded", "-nats-listen", natsAddr)
		} else {
			argv = append(argv, "-nats", "nats://"+natsAddr)
		}
		argvs = append(argvs, append(argv, common...))
		urls = append(urls, "ws://"+addr+"/rpc")
		health = append(health, "http://"+addr+"/readyz")
	}
	s := &servers{}
	if err := s.launch(ctx, argvs[:1], health[:1], readyWait); err != nil { // NATS first
		return nil, err
	}
	defer s.stop()
	if err := s.launch(ctx, argvs[1:], health[1:], readyWait); err != nil {
		return nil, err
	}
	pids := func() []int {
		var p []int
		for _, proc := range s.procs {
			p = append(p, proc.pid())
		}
		return p
	}
	r := &clusterResult{Nodes: c.nodes, Peers: n, Swarms: count, IdleSeconds: c.idle.Seconds()}
	// The publisher takes its place on the first hub before the peers
	// fill it, and keeps it.
	pub, err := dialControl(ctx, urls[0])
	if err != nil {
		return nil, err
	}
	defer pub.close()
	nodes, err := readNodes(ctx, urls, pids())
	if err != nil {
		return nil, err
	}
	logf("cluster: %d peers to %d hubs from %d processes", n, c.nodes, count)
	ss, secs, err := launchSwarms(n, count, urls, c.dialers)
	if err != nil {
		return nil, err
	}
	defer ss.stop()
	r.ConnectSeconds = secs
	logf("cluster: connected in %.1f s; idle for %v", secs, c.idle)
	idle, err := measureIdle(ctx, c, urls, pids())
	if err != nil {
		return nil, err
	}
	goroutines := 0
	for i, a := range idle.after {
		peers := a.conns - nodes[i].conns // not the publisher
		r.PeersPerNode = append(r.PeersPerNode, peers)
		r.RSSPerPeer = append(r.RSSPerPeer, float64(a.rss-nodes[i].rss)/float64(max(peers, 1)))
		goroutines += a.goroutines - nodes[i].goroutines
	}
	r.GoroutinesPerPeer = float64(goroutines) / float64(n)
	r.IdleCPUPerPeer = idle.cpuPerPeerSecond(n)

	if r.Subscribe, err = subscribeQuiet(ss, pids(), idle.cpuPerSecond()); err != nil {
		return nil, err
	}
	logf("cluster: fan-out of %d events", c.events)
	if r.Fanout, err = fanoutAll(ss, pub, pids(), c.events, idle.cpuPerSecond()); err != nil {
		return nil, err
	}
	if !c.restart {
		return r, nil
	}
	// During the restart events are published at a third of the rate
	// at which the cluster delivered them to all, measured just before:
	// faster, the machine would spend itself on deliveries it cannot
	// keep up with rather than on the reconnections measured.
	every := max(time.Second, time.Duration(3*float64(n)/max(r.Fanout.DeliveriesPerSec, 1)*float64(time.Second)))
	logf("cluster: restart of node%d, with an event every %v", c.nodes, every.Round(time.Millisecond))
	r.Restart, err = restartNode(ctx, s, c.nodes-1, argvs, health, urls, ss, pub, c.events, every)
	return r, err
}

// node is what one hub's /proc and /metrics said at one moment.
type node struct {
	rss               int64
	goroutines, conns int
	used              procUsage
}

func readNodes(ctx context.Context, urls []string, pids []int) ([]node, error) {
	nodes := make([]node, len(urls))
	for i, u := range urls {
		var err error
		if nodes[i].rss, err = residentOfPID(pids[i]); err != nil {
			return nil, err
		}
		if nodes[i].used, err = readUsage(pids[i]); err != nil {
			return nil, err
		}
		g, err := metric(ctx, metricsURL(u), "go_goroutines")
		if err != nil {
			return nil, err
		}
		conns, err := metric(ctx, metricsURL(u), "switchboard_connections")
		if err != nil {
			return nil, err
		}
		nodes[i].goroutines, nodes[i].conns = int(g), int(conns)
	}
	return nodes, nil
}

// idleFigures are the hubs before and after an idle spell.
type idleFigures struct {
	before, after []node
	seconds       float64
}

// cpuPerPeerSecond is the hubs' CPU time over the spell, per peer per
// second, in µs.
func (f idleFigures) cpuPerPeerSecond(peers int) float64 {
	return f.cpuPerSecond() / float64(peers)
}

// cpuPerSecond is the hubs' CPU time over the spell, per second, in µs.
func (f idleFigures) cpuPerSecond() float64 {
	var cpu time.Duration
	for i := range f.after {
		cpu += f.after[i].used.cpu - f.before[i].used.cpu
	}
	return float64(cpu.Nanoseconds()) / 1e3 / f.seconds
}

// measureIdle lets the hubs settle (the last handshakes' garbage
// collected), then reads them over c.idle of
// nothing but their pings; the after figures' memory and goroutines are
// read at its start, the CPU time over it.
func measureIdle(ctx context.Context, c *scaleConfig, urls []string, pids []int) (idleFigures, error) {
	time.Sleep(c.settle)
	before, err := readNodes(ctx, urls, pids)
	if err != nil {
		return idleFigures{}, err
	}
	start := time.Now()
	time.Sleep(c.idle)
	after, err := readNodes(ctx, urls, pids)
	if err != nil {
		return idleFigures{}, err
	}
	for i := range after { // memory and goroutines as they were once settled
		after[i].rss, after[i].goroutines, after[i].conns = before[i].rss, before[i].goroutines, before[i].conns
	}
	return idleFigures{before: before, after: after, seconds: time.Since(start).Seconds()}, nil
}

// fanoutAll publishes events, one at a time, each once every peer holds
// the one before, and reports the deliveries. idle is the hubs' CPU time
// per second when idle, in µs, to tell the deliveries' cost apart. Beside
// the hubs' CPU time, it counts each hub's, the load generator's (ss) and
// the whole machine's over the same time: the hubs share the cores with
// the processes that read their peers' sockets, and with whatever else
// runs.
func fanoutAll(ss swarms, pub *control, pids []int, events int, idle float64) (fanoutResult, error) {
	f := fanoutResult{Events: events}
	load := ss.pids()
	before, err := readCPU(pids, load)
	if err != nil {
		return f, err
	}
	start := time.Now()
	hist := histogram{}
	var rates []float64
	for k := 1; k <= events; k++ {
		t0 := time.Now()
		if err := publish(pub, k); err != nil {
			return f, err
		}
		r, err := ss.wait(k, time.Minute)
		if err != nil {
			return f, err
		}
		f.Deliveries += r.Deliveries
		f.Missing, f.Dups = r.Missing, r.Dups
		hist.merge(r.Hist)
		if r.Complete != r.Peers {
			return f, fmt.Errorf("event %d: %d of %d peers have it after a minute (%d missing)", k, r.Complete, r.Peers, r.Missing)
		}
		rates = append(rates, float64(r.Deliveries)/time.Unix(0, r.LastDelivery).Sub(t0).Seconds())
	}
	elapsed := time.Since(start)
	after, err := readCPU(pids, load)
	if err != nil {
		return f, err
	}
	cpu0, load0, busy0 := before.hubs, before.load, before.busy
	cpu1, load1, busy1 := after.hubs, after.load, after.busy
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 / float64(max(f.Deliveries, 1)) }
	var used, loadUsed time.Duration
	for i := range cpu1 {
		used += cpu1[i] - cpu0[i]
		f.NodeCPUPerDelivery = append(f.NodeCPUPerDelivery, per(cpu1[i]-cpu0[i]))
	}
	for i := range load1 {
		loadUsed += load1[i] - load0[i]
	}
	f.CPUPerDelivery = per(used)
	f.CPUAboveIdle = max(f.CPUPerDelivery-idle*elapsed.Seconds()/float64(max(f.Deliveries, 1)), 0)
	f.LoadCPUPerDelivery = per(loadUsed)
	f.Seconds = elapsed.Seconds()
	f.MachineBusy = (busy1 - busy0).Seconds() / elapsed.Seconds() / float64(runtime.NumCPU())
	f.OtherCPUPerDelivery = max(per(busy1-busy0)-f.CPUPerDelivery-f.LoadCPUPerDelivery, 0)
	f.DeliveriesPerSec = median(rates)
	f.P50, f.P99 = hist.quantile(0.50), hist.quantile(0.99)
	return f, nil
}

// cpuReading is the CPU time of the hubs and of the load generator's
// processes, each, and of the whole machine, at one moment.
type cpuReading struct {
	hubs, load []time.Duration
	busy       time.Duration
}

func readCPU(hubs, load []int) (r cpuReading, err error) {
	if r.hubs, err = cpuTimes(hubs); err != nil {
		return r, err
	}
	if r.load, err = cpuTimes(load); err != nil {
		return r, err
	}
	r.busy, err = machineBusy()
	return r, err
}

// cpuTimes returns the CPU time of each of pids.
func cpuTimes(pids []int) ([]time.Duration, error) {
	out := make([]time.Duration, len(pids))
	for i, p := range pids {
		u, err := readUsage(p)
		if err != nil {
			return nil, err
		}
		out[i] = u.cpu
	}
	return out, nil
}

// waitMetric polls u's metric until it is want, for up to d.
func waitMetric(ctx context.Context, u, name string, want float64, d time.Duration) error {
	return pollMetric(ctx, u, name, want, d, func(v float64) bool { return v == want })
}

// waitMetricAtMost polls u's metric until it is at most want, for up to d.
func waitMetricAtMost(ctx context.Context, u, name string, want float64, d time.Duration) error {
	return pollMetric(ctx, u, name, want, d, func(v float64) bool { return v <= want })
}

func pollMetric(ctx context.Context, u, name string, want float64, d time.Duration, ok func(float64) bool) error {
	deadline := time.Now().Add(d)
	for {
		v, err := metric(ctx, metricsURL(u), name)
		if err != nil {
			return err
		}
		if ok(v) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s is %v after %v, want %v", name, v, d, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// readLeft reads what the hub at u holds once its peers left at left: its
// goroutines, its heap in use, the heap it freed but keeps (Go gives freed
// memory back to the system gradually, after collections), and whether it
// has collected since.
func readLeft(ctx context.Context, u string, left time.Time) (leftResult, error) {
	var r leftResult
	names := []string{"go_goroutines", "go_memstats_heap_inuse_bytes", "go_memstats_heap_idle_bytes",
		"go_memstats_heap_released_bytes", "go_memstats_last_gc_time_seconds"}
	v := make([]float64, len(names))
	for i, name := range names {
		var err error
		if v[i], err = metric(ctx, metricsURL(u), name); err != nil {
			return r, err
		}
	}
	r.Goroutines, r.HeapInuse, r.HeapKept = int(v[0]), int64(v[1]), int64(v[2]-v[3])
	r.Collected = v[4] > float64(left.UnixNano())/1e9
	return r, nil
}
