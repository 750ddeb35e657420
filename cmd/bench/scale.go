package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// "bench scale" measures how many peers the hub holds and what they cost:
//
//   - single: one hub with as many peers as the file descriptor limit lets
//     a process hold, with the default pings: memory, goroutines and idle
//     CPU per peer, the time to connect them, the memory returned once they
//     leave, and one event published to all of them; and the floor's idle
//     memory per connection at the same count.
//   - beside: the cluster's hubs with as many peers as the single hub,
//     and the same events: a delivery's cost beside one hub's.
//   - cluster: hubs joined over NATS with JetStream (the first runs NATS),
//     as many peers as they hold, held by several swarm processes (see
//     swarm.go) from loopback addresses 127.0.0.2 and up, all subscribed to
//     one topic; the same figures per node, and a restart of one node while
//     events are published: how long until its peers are back (on the
//     others where they have room, else on their own), and whether any
//     event was lost or came twice.
//
// The results go to -json, for "bench scalereport" to write the page. If
// the cluster part fails, the file still holds the single hub's results,
// and what failed; scale then exits with the error.

// scaleResult is everything one scale run measured.
type scaleResult struct {
	Meta    scaleMeta      `json:"meta"`
	Single  *singleResult  `json:"single,omitempty"`
	Cluster *clusterResult `json:"cluster,omitempty"`
	// Beside is the cluster with the single hub's peers (scalebeside.go).
	Beside *clusterResult `json:"beside,omitempty"`
	// ClusterFailed is why the cluster part has no results, if it ran.
	ClusterFailed string `json:"clusterFailed,omitempty"`
}

type scaleMeta struct {
	Date     string `json:"date"`
	Go       string `json:"go"`
	CPUs     int    `json:"cpus"`
	CPU      string `json:"cpu"`
	MemoryMB int64  `json:"memoryMB"`
	FDLimit  int    `json:"fdLimit"`
	LoadAvg  string `json:"loadavg"` // at the start
	Command  string `json:"command"`
}

type singleResult struct {
	Peers             int             `json:"peers"`
	ConnectSeconds    float64         `json:"connectSeconds"`
	RSSBefore         int64           `json:"rssBefore"`
	RSSIdle           int64           `json:"rssIdle"`
	RSSPeak           int64           `json:"rssPeak"`  // after the fan-out
	RSSAfter          int64           `json:"rssAfter"` // once the peers left
	ReturnedSeconds   float64         `json:"returnedSeconds"`
	Left              leftResult      `json:"left"`
	RSSPerPeer        float64         `json:"rssPerPeer"`
	FloorRSSPerPeer   float64         `json:"floorRSSPerPeer"`
	GoroutinesPerPeer float64         `json:"goroutinesPerPeer"`
	IdleSeconds       float64         `json:"idleSeconds"`
	IdleCPUPerPeer    float64         `json:"idleCPUusPerPeerSecond"`
	Subscribe         subscribeResult `json:"subscribe"`
	Fanout            fanoutResult    `json:"fanout"`
}

// leftResult is what the hub holds once its peers left, read with
// RSSAfter: whether what it has not given back is held by the hub or kept
// by the Go runtime.
type leftResult struct {
	GoroutinesBefore int   `json:"goroutinesBefore"` // before the peers came
	Goroutines       int   `json:"goroutines"`
	HeapInuse        int64 `json:"heapInuse"` // live and not yet collected
	HeapKept         int64 `json:"heapKept"`  // freed, not given back to the system
	Collected        bool  `json:"collected"` // a collection ran after the peers left
}

type fanoutResult struct {
	Events           int     `json:"events"`
	Deliveries       int     `json:"deliveries"`
	DeliveriesPerSec float64 `json:"deliveriesPerSec"` // median over the events
	P50              float64 `json:"p50us"`
	P99              float64 `json:"p99us"`
	CPUPerDelivery   float64 `json:"cpuUsPerDelivery"` // of the hub processes
	// CPUAboveIdle is CPUPerDelivery without what the hubs spend idle
	// (their peers' pings) over the same time: the cost of delivering.
	CPUAboveIdle float64 `json:"cpuUsPerDeliveryAboveIdle"`
	Missing      int     `json:"missing"`
	Dups         int     `json:"dups"`
	// Seconds is how long the fan-out took, from the first publish to
	// the last delivery's report.
	Seconds float64 `json:"seconds"`
	// NodeCPUPerDelivery is CPUPerDelivery hub by hub (in all, idle
	// included).
	NodeCPUPerDelivery []float64 `json:"nodeCpuUsPerDelivery,omitempty"`
	// LoadCPUPerDelivery is the load generator's CPU time per delivery:
	// its processes read every peer's socket on the same cores.
	LoadCPUPerDelivery float64 `json:"loadCpuUsPerDelivery"`
	// MachineBusy is the share of all the machine's cores busy meanwhile
	// (0 to 1), and OtherCPUPerDelivery the CPU time per delivery of
	// everything that was neither a hub nor the load generator: the
	// machine's other work, which took the same cores.
	MachineBusy         float64 `json:"machineBusy"`
	OtherCPUPerDelivery float64 `json:"otherCpuUsPerDelivery"`
}

// deliveryCost is the CPU time one delivery costs: above idle, where it
// was measured.
func (f fanoutResult) deliveryCost() float64 {
	if f.CPUAboveIdle == 0 {
		return f.CPUPerDelivery
	}
	return f.CPUAboveIdle
}

type clusterResult struct {
	Nodes             int             `json:"nodes"`
	Peers             int             `json:"peers"`
	Swarms            int             `json:"swarms"`
	ConnectSeconds    float64         `json:"connectSeconds"`
	PeersPerNode      []int           `json:"peersPerNode"`
	RSSPerPeer        []float64       `json:"rssPerPeer"` // per node
	GoroutinesPerPeer float64         `json:"goroutinesPerPeer"`
	IdleSeconds       float64         `json:"idleSeconds"`
	IdleCPUPerPeer    float64         `json:"idleCPUusPerPeerSecond"` // all hubs
	Subscribe         subscribeResult `json:"subscribe"`
	Fanout            fanoutResult    `json:"fanout"`
	Restart           restartResult   `json:"restart"`
}

type restartResult struct {
	Node         int     `json:"node"`
	Peers        int     `json:"peers"`        // it held
	Reconnects   int     `json:"reconnects"`   // peers that reconnected
	Seconds      float64 `json:"seconds"`      // from the signal to the last reconnection
	StoppedAfter float64 `json:"stoppedAfter"` // seconds from the signal to the node's exit
	BackAfter    float64 `json:"backAfter"`    // seconds from the signal to the node's being ready again
	// PeersPerNode counts the peers on each node once all reconnected:
	// those that found room on the others, and those that waited for
	// their own node.
	PeersPerNode []int `json:"peersPerNode"`
	// DialErrors counts the reconnecting peers' failed dials by kind:
	// refused (the node was down), full (503 from a node at its limit),
	// timeout, other; OtherError is the first of the last kind.
	DialErrors   map[string]int64 `json:"dialErrors,omitempty"`
	OtherError   string           `json:"otherError,omitempty"`
	Events       int              `json:"events"`       // published meanwhile
	PublishEvery float64          `json:"publishEvery"` // seconds between them
	Missing      int              `json:"missing"`
	Dups         int              `json:"dups"`
	// Refused counts the publishes the hub answered with an error (the
	// stream unavailable) and the publisher tried again; RefusedReply is
	// the first such answer. Again counts the deliveries of an event a
	// second time under a new position: a refused publish that was stored
	// all the same, then tried again.
	Refused      int    `json:"refused,omitempty"`
	RefusedReply string `json:"refusedReply,omitempty"`
	Again        int    `json:"again,omitempty"`
}

// scaleConfig holds scale's flags.
type scaleConfig struct {
	hub          string
	parts        string
	peers        int // single: 0 for as many as the fd limit allows
	nodes        int
	clusterPeers int
	swarms       int
	idle         time.Duration
	events       int
	restart      bool
	dialers      int
	settle       time.Duration // after connecting, before memory is read
	returned     time.Duration // after the peers left, the longest memory is read
}

func scaleCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("scale", flag.ContinueOnError)
	var c scaleConfig
	fs.StringVar(&c.hub, "hub", "bin/hub", "the hub `binary`")
	fs.StringVar(&c.parts, "parts", "single,beside,cluster", "which `parts` to run")
	fs.IntVar(&c.peers, "peers", 0, "peers of the single hub (0: as many as the file descriptor limit allows)")
	// Five nodes at the file descriptor limit would hold 100,000 peers,
	// but then a restarted node's peers find no room on the others.
	fs.IntVar(&c.nodes, "nodes", 6, "hubs of the cluster: with one more than the peers need, the others have room for most of a restarted node's peers")
	fs.IntVar(&c.clusterPeers, "cluster-peers", 100000, "peers of the cluster, at most what the nodes' file descriptor limits allow")
	fs.IntVar(&c.swarms, "swarms", 0, "processes holding the cluster's peers (0: as few as the file descriptor limit allows)")
	fs.DurationVar(&c.idle, "idle", 30*time.Second, "how long the idle CPU time is measured (the default ping interval: every peer is pinged once)")
	fs.IntVar(&c.events, "events", 5, "events published to all, one after another")
	fs.BoolVar(&c.restart, "restart", true, "restart a node of the cluster after its fan-out")
	fs.IntVar(&c.dialers, "dialers", 64, "connections each swarm opens at once")
	fs.DurationVar(&c.settle, "settle", 5*time.Second, "how long the hubs are left alone once the peers are connected, before their memory is read")
	fs.DurationVar(&c.returned, "returned", 150*time.Second, "how long after the peers left the hub's memory is read, at most (until nine tenths of what they took is back)")
	jsonOut := fs.String("json", "bin/scale.json", "write the results to `file`")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if (strings.Contains(c.parts, "cluster") || strings.Contains(c.parts, "beside")) && c.nodes < 2 { // the publisher's node stays up while the last restarts
		return errors.New("-nodes: a cluster has at least 2")
	}
	// No results are better than the last run's taken for this one's.
	if err := os.Remove(*jsonOut); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	limit := fdLimit()
	res := scaleResult{Meta: scaleMeta{
		Date: time.Now().UTC().Format("2006-01-02 15:04 MST"), Go: runtime.Version(), CPUs: runtime.NumCPU(),
		CPU: cpuModel(), MemoryMB: memTotalMB(), FDLimit: limit, LoadAvg: loadAvg(),
		Command: "bench scale " + strings.Join(args, " "),
	}}
	// Room in every process for what is not a peer: listeners, NATS,
	// standard files, the /metrics requests (a hub uses some 20).
	room := limit - 100
	if room < 10 {
		return fmt.Errorf("a file descriptor limit of %d leaves no room for peers", limit)
	}
	if strings.Contains(c.parts, "single") {
		n := c.peers
		if n == 0 {
			n = room
		}
		r, err := scaleSingle(ctx, &c, n)
		if err != nil {
			return fmt.Errorf("single: %w", err)
		}
		res.Single = r
		if err := writeScale(*jsonOut, &res); err != nil { // kept if the cluster fails
			return err
		}
	}
	if strings.Contains(c.parts, "beside") {
		n := min(cmp.Or(c.peers, room), room) // the single hub's, and one swarm holds them
		if res.Single != nil {
			n = res.Single.Peers
		}
		r, err := scaleBeside(ctx, &c, n, room)
		if err != nil {
			err = fmt.Errorf("cluster: beside one hub: %w", err)
			res.ClusterFailed = err.Error()
			return errors.Join(err, writeScale(*jsonOut, &res))
		}
		res.Beside = r
		if err := writeScale(*jsonOut, &res); err != nil {
			return err
		}
	}
	if strings.Contains(c.parts, "cluster") {
		n := min(c.clusterPeers, c.nodes*room)
		swarms := c.swarms
		if swarms == 0 {
			swarms = (n + room - 1) / room
		}
		r, err := scaleCluster(ctx, &c, n, swarms, room)
		if err != nil {
			err = fmt.Errorf("cluster: %w", err)
			res.ClusterFailed = err.Error()
			return errors.Join(err, writeScale(*jsonOut, &res))
		}
		res.Cluster = r
	}
	return writeScale(*jsonOut, &res)
}

// writeScale prints the results and writes them to path.
func writeScale(path string, res *scaleResult) error {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	fmt.Printf("%s\n", b)
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// fdLimit is this process's file descriptor limit: Go raises the soft one
// to the hard one at start, and the processes it starts get the same.
func fdLimit() int {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 1024
	}
	if r.Cur < r.Max { // Go does it; ask again in case it could not
		r.Cur = r.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &r)
		_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r)
	}
	return int(r.Cur)
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

// machineBusy returns the CPU time all the machine's cores have spent on
// anything but waiting, since it started (/proc/stat).
func machineBusy() (time.Duration, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat: %q", line)
	}
	var busy int64
	for i, v := range f[1:] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat: %q", line)
		}
		// user nice system idle iowait irq softirq steal guest guest_nice:
		// guest time is counted in user time already.
		if i != 3 && i != 4 && i < 8 {
			busy += n
		}
	}
	return time.Duration(busy) * clockTick, nil
}

func memTotalMB() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb / 1024
		}
	}
	return 0
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s scale: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}
