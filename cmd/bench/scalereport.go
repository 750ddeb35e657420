package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"html"
	"os"
	"strings"
)

// scaleReportCmd writes docs/scale.md and its chart from scale's results.
func scaleReportCmd(args []string) error {
	fs := flag.NewFlagSet("scalereport", flag.ContinueOnError)
	files := pageFlags(fs, "docs/scale.md", "docs/img/scale-memory.svg")
	note := fs.String("note", "", "what else the machine was doing, for the page")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("usage: bench scalereport [flags] SCALE.json")
	}
	b, err := os.ReadFile(fs.Arg(0))
	if err != nil {
		return err
	}
	var r scaleResult
	if err := json.Unmarshal(b, &r); err != nil {
		return err
	}
	return files.write(memoryChart(&r), func(chart string) ([]byte, error) {
		return scalePage(&r, chart, *note), nil
	})
}

// Centrifugo's published figures, as quoted in the issue that asked for
// this page: a million connections on 20 pods, about 27 KB per idle
// connection by default, 11.6 KB in its tuned paid edition, and 50,000 to
// 100,000 clients per node advised in its FAQ.
const (
	centrifugoDefaultKB = 27.0
	centrifugoTunedKB   = 11.6
)

// projected is the projection to a million peers on 16-core nodes.
type projected struct {
	peers, perNode, nodes, cores int
	memGB, idleCores             float64
	fanoutSeconds, connectSecs   float64
}

func project(r *scaleResult) (projected, bool) {
	if r.Single == nil || r.Single.ConnectSeconds == 0 {
		return projected{}, false
	}
	p := projected{peers: 1_000_000, perNode: 50_000, cores: 16}
	p.nodes = p.peers / p.perNode
	p.memGB = float64(p.perNode) * r.Single.RSSPerPeer / 1e9
	// The cluster's costs where it was measured, else the single hub's.
	idle, perDelivery := r.Single.IdleCPUPerPeer, r.Single.Fanout.deliveryCost()
	peers, secs := float64(r.Single.Peers), r.Single.ConnectSeconds
	if c := r.Cluster; c != nil && c.ConnectSeconds > 0 {
		idle, perDelivery = c.IdleCPUPerPeer, c.Fanout.deliveryCost()
		peers, secs = float64(c.Peers), c.ConnectSeconds
	}
	p.idleCores = float64(p.perNode) * idle / 1e6
	// One event to every peer: each node's deliveries, its CPU time per
	// delivery spread over its cores.
	p.fanoutSeconds = float64(p.perNode) * perDelivery / 1e6 / float64(p.cores)
	// Connecting: the measured rate was had on cores shared with the load
	// generator; per core, it scales with the cores.
	perCore := peers / secs / float64(max(r.Meta.CPUs, 1))
	p.connectSecs = float64(p.perNode) / (perCore * float64(p.cores))
	return p, true
}

func scalePage(r *scaleResult, chart, note string) []byte {
	var b bytes.Buffer
	m := r.Meta
	fmt.Fprintf(&b, `# Scale: peers by the ten thousand

This page is written by `+"`make scale`"+` (`+"`bench scale`"+`, then `+"`bench scalereport`"+`); do not
edit it by hand. It answers two questions asked before choosing a hub: how many
connected peers one node holds, and what they cost. Every figure was measured on
the machine below in one run, by the project's own load generator, against real
hub processes over loopback; only the last section is a projection.

- Date: %s
- Machine: %s, %d CPUs, %s MB of memory, a file descriptor limit of %s per process
- Load average at the start: %s
- Command: `+"`%s`"+`
`, m.Date, m.CPU, m.CPUs, human(float64(m.MemoryMB)), human(float64(m.FDLimit)), m.LoadAvg, m.Command)
	if note != "" {
		fmt.Fprintf(&b, "- The machine meanwhile: %s\n", note)
	}
	fmt.Fprintf(&b, "\n![Resident memory per idle peer](%s)\n", chart)
	if s := r.Single; s != nil {
		fmt.Fprintf(&b, `
## One hub at the file descriptor limit

One hub process (`+"`hub -demo`"+`, default pings: every 30 s) and %s peers, as many as a
process may hold under the limit, connected by one process of the load generator;
each made one call (`+"`rpc.ping`"+`) so that the hub set it up fully. Then each
subscribed to one topic and %d events were published to it, one after another,
each once every peer held the one before. Then the peers left.

| figure | hub | floor | ratio | target |
| --- | ---: | ---: | ---: | --- |
| resident memory per idle peer | %s | %s | %s | ≤ 1.1 %s |
| goroutines per peer | %.2f | | | |
| idle CPU per peer (pings only) | %.2f µs/s | | | |
| time to connect them all | %.1f s (%s peers/s) | | | |
| resident memory: before, idle, after the fan-out, %.0f s after they left | %s, %s, %s, %s | | | |
| once they left: goroutines (before they came), heap in use, heap freed but kept by Go | %d (%d), %s, %s | | | |
| fan-out of one event to all: deliveries/s (median event) | %s | | | |
| delivery latency, publish to peer: p50, p99 | %s, %s | | | |
| hub CPU per delivery: in all, and above what the idle peers cost meanwhile | %s | | | |
| events missing, twice | %d, %d | | | |

The floor is this program's minimal WebSocket server (coder/websocket, a goroutine
reading each connection, nothing else), with the same peers connected the same way.
Memory is read until nine tenths of what the peers took is back, or for at most
two and a half minutes: Go collects garbage when a program allocates, or every two
minutes when it does not, and gives memory back to the system after that.
What the hub has not given back once the peers left is not held by it: its
goroutines are as many as before the peers came, and the heap in use (%s)
is mostly the Go runtime's records of the goroutines it ran, which it keeps
for reuse, and the hub's tables of connections, which keep the size they
grew to. The rest is heap the collector has freed and the runtime keeps:
it gives freed memory back to the system gradually, after collections, and
a hub left idle collects only every two minutes; the next peers reuse it.
Idle CPU is the hub's CPU time over %.0f s of nothing but its pings, over the peers
and the seconds; %s peers cost it %.1f%% of one core.
`, human(float64(s.Peers)), s.Fanout.Events,
			kb(s.RSSPerPeer), kb(s.FloorRSSPerPeer), ratioOrDash(s.RSSPerPeer, s.FloorRSSPerPeer), verdict(s.RSSPerPeer/s.FloorRSSPerPeer <= 1.1),
			s.GoroutinesPerPeer, s.IdleCPUPerPeer,
			s.ConnectSeconds, human(float64(s.Peers)/s.ConnectSeconds),
			s.ReturnedSeconds, mb(s.RSSBefore), mb(s.RSSIdle), mb(s.RSSPeak), mb(s.RSSAfter),
			s.Left.Goroutines, s.Left.GoroutinesBefore, mb(s.Left.HeapInuse), mb(s.Left.HeapKept),
			human(s.Fanout.DeliveriesPerSec), micros(s.Fanout.P50), micros(s.Fanout.P99), cpuPerDelivery(s.Fanout),
			s.Fanout.Missing, s.Fanout.Dups, collectedText(s.Left), s.IdleSeconds, human(float64(s.Peers)), s.IdleCPUPerPeer*float64(s.Peers)/1e4)
	}
	writeBeside(&b, r.Single, r.Beside)
	if c := r.Cluster; c != nil {
		var rss []string
		for i := range c.PeersPerNode {
			rss = append(rss, kb(c.RSSPerPeer[i]))
		}
		fmt.Fprintf(&b, `
## %s peers over %d hubs joined over NATS

%d hub processes joined over NATS with JetStream (the first one runs the NATS server,
embedded), each refusing peers beyond its file descriptors (`+"`-max-conns`"+`); %d processes
of the load generator, each from a loopback source address of its own (127.0.0.2 and
up), hold the peers, spread evenly over the hubs. All subscribe to one topic; one
publish on the first hub reaches all of them, %d times (the publisher connects before
the peers, and stays). Then the last hub is stopped (SIGTERM: it closes its peers with
1001) and started again while events are published, at a third of the rate at which
the cluster delivered them to all just before. Its peers reconnect
as the Go client does: a pause before each attempt that starts at 100 ms and doubles up
to 10 s, drawn between half and all of it, and at least the Retry-After of a hub that
refused with 503; each tries its own hub first and then the others in turn, each peer
starting from a different one. The others take as many as their limits leave room
for; the rest come back to their own hub once it is up. Each peer resumes its
subscription from the last event it processed. The load generator's processes share
the machine's cores with the hubs: the rates and latencies include their own time to
read every socket.

| figure | |
| --- | ---: |
| peers per hub | %s |
| time to connect them all | %.1f s (%s peers/s) |
| resident memory per idle peer, per hub | %s |
| goroutines per peer | %.2f |
| idle CPU per peer, all hubs (pings only) | %.2f µs/s |
| fan-out of one event to all: deliveries/s (median event) | %s |
| delivery latency, publish to peer: p50, p99 | %s, %s |
| CPU of all hubs per delivery: in all, and above what the idle peers cost meanwhile | %s |
| events missing, twice | %d, %d |
| restart of hub %d: its peers | %s |
| time from the signal until the hub has stopped (closing its peers with 1001), and until it is ready again | %.1f s, %.1f s |
| time from the signal until the last of its peers is back | %.1f s |
| peers per hub once they are | %s |
| failed dials meanwhile: refused (hub down), full (503), timed out, other | %s |
| events published meanwhile, one every %.1f s; missing, twice, at any peer | %d; %d, %d |
| publishes refused meanwhile and tried again; events that came again, at any peer | %s |
`, human(float64(c.Peers)), c.Nodes, c.Nodes, c.Swarms, c.Fanout.Events,
			humanInts(c.PeersPerNode), c.ConnectSeconds, human(float64(c.Peers)/c.ConnectSeconds), strings.Join(rss, ", "),
			c.GoroutinesPerPeer, c.IdleCPUPerPeer, human(c.Fanout.DeliveriesPerSec), micros(c.Fanout.P50), micros(c.Fanout.P99),
			cpuPerDelivery(c.Fanout), c.Fanout.Missing, c.Fanout.Dups,
			c.Restart.Node, human(float64(c.Restart.Peers)), c.Restart.StoppedAfter, c.Restart.BackAfter, c.Restart.Seconds, humanInts(c.Restart.PeersPerNode),
			dialErrorsText(c.Restart), c.Restart.PublishEvery, c.Restart.Events, c.Restart.Missing, c.Restart.Dups, refusedText(c.Restart))
	}
	if r.ClusterFailed != "" {
		fmt.Fprintf(&b, `
## Hubs joined over NATS

The cluster part of this run failed, so it has no figures here: %s.
`, r.ClusterFailed)
	}
	writeProjection(&b, r)
	b.WriteString(`
## Run it

` + "```sh" + `
make scale                      # builds bin/hub and bin/bench, runs the three parts, writes this page
bin/bench scale -parts single   # or some: single,beside,cluster; -peers, -nodes, -cluster-peers, -idle, -events, -restart
bin/bench scalereport bin/scale.json
` + "```" + `

It needs the loopback addresses 127.0.0.2 and up (Linux routes all of 127.0.0.0/8 to
the loopback interface) and, for the cluster part, a file descriptor limit that
lets each process hold its share: the load generator uses as many processes as the
limit asks for. A node of the cluster is waited for until its ` + "`/readyz`" + ` answers,
for up to two minutes (it opens its JetStream stream before it listens). If the
cluster part fails, ` + "`bench scale`" + ` still writes the single hub's results with what
failed, and exits with the failure; ` + "`make scale`" + ` writes this page either way.
`)
	return b.Bytes()
}

func humanInts(v []int) string {
	var s []string
	for _, n := range v {
		s = append(s, human(float64(n)))
	}
	return strings.Join(s, ", ")
}

// dialErrorsText lists a restart's failed dials by kind, with the first
// of the unexpected kind.
func dialErrorsText(r restartResult) string {
	var s []string
	for _, k := range dialKindNames {
		s = append(s, human(float64(r.DialErrors[k])))
	}
	t := strings.Join(s, ", ")
	if r.OtherError != "" {
		t += " (first other: " + r.OtherError + ")"
	}
	return t
}

// refusedText says how many publishes the hub refused during a restart
// (it answers an error when the stream does not acknowledge in time) and
// how many events peers then got twice, at two positions: those the
// stream had stored all the same before the publisher tried again.
func refusedText(r restartResult) string {
	t := fmt.Sprintf("%d; %d", r.Refused, r.Again)
	if r.RefusedReply != "" {
		t += " (the first refusal: `" + r.RefusedReply + "`)"
	}
	return t
}

func writeProjection(b *bytes.Buffer, r *scaleResult) {
	p, ok := project(r)
	if !ok {
		return
	}
	fmt.Fprintf(b, `
## A million peers on 16-core nodes: a projection

**This is a projection on paper, not a measurement.** It multiplies the figures
measured above by the counts of a larger deployment, and assumes that a node's cost
grows linearly with its peers and that its CPU time spreads over its cores, which a
2-core machine cannot show.

| | Switchboard (projected) | Centrifugo (published) |
| --- | ---: | ---: |
| peers | %s | 1,000,000 |
| nodes | %d of 16 cores, %s peers each | 20 pods |
| per node advised | | 50,000 to 100,000 clients |
| resident memory per idle peer | %s (measured) | about %.0f KB by default, %.1f KB tuned (paid edition) |
| resident memory per node | %.1f GB | |
| idle CPU per node (pings) | %.2f cores | |
| one event to all: time on each node | %.2f s | |
| a node's peers reconnecting at the measured rate per core | %.1f s | |

The node count follows Centrifugo's advice of 50,000 to 100,000 clients per node, at
its low end. Each node's share of an event to all is its %s deliveries at the CPU time
per delivery measured above idle (in the cluster where it was, else on the single hub),
over 16 cores; the idle peers' cost is the row above it.

Kernel settings such a node needs (none of them needed on this machine, which held
%s peers per process under its limit of %s):

- File descriptors: a limit above the node's peers plus room, per process
  (`+"`LimitNOFILE=200000`"+` in a systemd unit, or `+"`ulimit -n`"+`), and `+"`fs.nr_open`"+` and
  `+"`fs.file-max`"+` above it.
- Ports: a server needs one listening port; a proxy or load generator in front of it
  needs a source port per connection to each backend address, at most
  `+"`net.ipv4.ip_local_port_range`"+` (32768-60999 by default, some 28,000) per source
  address: widen it (`+"`1024 65535`"+`) and give the proxy several source addresses,
  as the load generator here uses 127.0.0.2 and up.
- Connection tracking: with netfilter loaded, `+"`net.netfilter.nf_conntrack_max`"+` above
  the connections through the box (a full table drops new connections), or a
  `+"`NOTRACK`"+` rule for the hub's port.
- Reconnection storms: `+"`net.core.somaxconn`"+` and `+"`net.ipv4.tcp_max_syn_backlog`"+` of
  some thousands, so that a node's peers coming back at once are queued, not
  dropped; the Go runtime's listen backlog follows `+"`somaxconn`"+`.
- Memory: the resident figures above are the hub's; the kernel's socket buffers
  come on top (`+"`net.ipv4.tcp_rmem`"+`, `+"`tcp_wmem`"+`, `+"`tcp_mem`"+`), small for idle
  peers.
`, human(float64(p.peers)), p.nodes, human(float64(p.perNode)), kb(r.Single.RSSPerPeer), centrifugoDefaultKB, centrifugoTunedKB,
		p.memGB, p.idleCores, p.fanoutSeconds, p.connectSecs, human(float64(p.perNode)),
		human(float64(r.Single.Peers)), human(float64(r.Meta.FDLimit)))
}

// collectedText says what the heap in use after the peers left holds.
func collectedText(l leftResult) string {
	if l.Collected {
		return mb(l.HeapInuse) + " after a collection"
	}
	return mb(l.HeapInuse) + ", garbage not yet collected included: no collection ran after the peers left"
}

func kb(bytes float64) string {
	if bytes == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f KB", bytes/1e3)
}

func mb(bytes int64) string { return fmt.Sprintf("%.0f MB", float64(bytes)/1e6) }

func ratioOrDash(a, b float64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", a/b)
}

func verdict(met bool) string {
	if met {
		return "met"
	}
	return "missed"
}

// memoryChart draws the resident memory per idle peer: the hub alone, the
// floor, each hub of the cluster, and Centrifugo's published figures.
func memoryChart(r *scaleResult) []byte {
	type bar struct {
		label, color string
		kb           float64
	}
	var bars []bar
	if s := r.Single; s != nil {
		bars = append(bars, bar{fmt.Sprintf("hub, %s peers", human(float64(s.Peers))), "#2e8b57", s.RSSPerPeer / 1e3},
			bar{"floor (bare WebSocket), same count", "#5b7db1", s.FloorRSSPerPeer / 1e3})
	}
	if c := r.Cluster; c != nil {
		for i, v := range c.RSSPerPeer {
			bars = append(bars, bar{fmt.Sprintf("cluster hub %d, %s peers", i+1, human(float64(c.PeersPerNode[i]))), "#3c9d6b", v / 1e3})
		}
	}
	bars = append(bars, bar{"Centrifugo, default (published)", "#999", centrifugoDefaultKB}, bar{"Centrifugo, tuned (published)", "#bbb", centrifugoTunedKB})
	const top, rowH, barH, left, plotW = 40, 30, 18, 260, 400
	maxKB := 1.0
	for _, b := range bars {
		maxKB = max(maxKB, b.kb*1.15)
	}
	x := func(v float64) float64 { return left + v/maxKB*plotW }
	height := top + rowH*len(bars) + 20
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="system-ui, sans-serif" font-size="13">
<rect width="100%%" height="100%%" fill="#fff"/>
<text x="12" y="22" font-size="15" font-weight="600">Resident memory per idle peer, KB (lower is better)</text>
`, left+plotW+80, height, left+plotW+80, height)
	for i, br := range bars {
		y := top + i*rowH
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>
<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>
<text x="%.1f" y="%d">%.1f</text>
`, left-8, y+barH-4, html.EscapeString(br.label), left, y, x(br.kb)-left, barH, br.color, x(br.kb)+4, y+barH-4, br.kb)
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// cpuPerDelivery shows a fan-out's CPU time per delivery, in all and
// above idle (runs before the second was measured show the first alone).
func cpuPerDelivery(f fanoutResult) string {
	if f.CPUAboveIdle == 0 {
		return fmt.Sprintf("%.2f µs", f.CPUPerDelivery)
	}
	return fmt.Sprintf("%.2f µs, %.2f µs", f.CPUPerDelivery, f.CPUAboveIdle)
}
