package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// reportCmd writes the benchmarks page: the machine, the commands, the
// load generator's table with ratios, a chart of the ratios against their
// targets, how to rerun them, and the Go micro-benchmarks. What past
// changes did to the figures is kept in a page of its own,
// benchmarks-history.md, written by hand beside it, which the page links to.
func reportCmd(args []string) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	files := pageFlags(fs, "docs/benchmarks.md", "docs/img/bench-ratios.svg")
	micro := fs.String("micro", "", "the output of go test -bench -benchmem, to include")
	seqRuns := fs.String("seqmode", "", "the JSON lines that bench seqmode -json wrote, to include")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: bench report [flags] RESULTS.jsonl")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errors.New("want the JSON lines that bench run -json wrote")
	}
	m, results, err := readResults(fs.Arg(0))
	if err != nil {
		return err
	}
	return files.write(ratioChart(results), func(chart string) ([]byte, error) {
		var microText []byte
		if *micro != "" {
			if microText, err = os.ReadFile(*micro); err != nil {
				return nil, err
			}
		}
		var seq bytes.Buffer
		if *seqRuns != "" {
			sm, runs, err := readSeqRuns(*seqRuns)
			if err != nil {
				return nil, err
			}
			writeSeqSection(&seq, sm, summarize(runs))
		}
		return page(m, results, chart, microText, seq.Bytes()), nil
	})
}

// judged returns none for a result without a target, met for one that
// reaches it and missed for one that does not.
func (r *result) judged(none, met, missed string) string {
	switch {
	case r.Target == 0:
		return none
	case r.met():
		return met
	}
	return missed
}

// pageFiles are where a report writes its page and the page's chart.
type pageFiles struct{ out, chart *string }

// pageFlags defines -o and -chart on fs, with their defaults.
func pageFlags(fs *flag.FlagSet, out, chart string) pageFiles {
	return pageFiles{
		out:   fs.String("o", out, "write the page to `file`"),
		chart: fs.String("chart", chart, "write the chart to `file` (linked from the page)"),
	}
}

// write writes the chart, then the page that page renders with the
// chart's path relative to the page's folder.
func (f pageFiles) write(chart []byte, page func(chart string) ([]byte, error)) error {
	if err := os.MkdirAll(filepath.Dir(*f.chart), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(*f.chart, chart, 0o644); err != nil {
		return err
	}
	rel, err := filepath.Rel(filepath.Dir(*f.out), *f.chart)
	if err != nil {
		rel = *f.chart
	}
	b, err := page(rel)
	if err != nil {
		return err
	}
	return os.WriteFile(*f.out, b, 0o644)
}

func readResults(path string) (meta, []result, error) {
	f, err := os.Open(path)
	if err != nil {
		return meta{}, nil, err
	}
	defer f.Close()
	var m meta
	var results []result
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Bytes()
		if bytes.HasPrefix(line, []byte(`{"meta"`)) {
			var w map[string]meta
			if err := json.Unmarshal(line, &w); err != nil {
				return m, nil, err
			}
			m = w["meta"]
			continue
		}
		var r result
		if err := json.Unmarshal(line, &r); err != nil {
			return m, nil, fmt.Errorf("%s: %w", path, err)
		}
		results = append(results, r)
	}
	return m, results, sc.Err()
}

// page renders the benchmarks page; seq, if not empty, is the section on
// the sequential call per mode (seqmode.go), placed after the CPU table.
func page(m meta, results []result, chart string, micro, seq []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `# Benchmarks

This page is written by `+"`make bench`"+`; do not edit it by hand. It compares the
hub with a floor, measured in the same run by the same load generator: a
minimal WebSocket server (coder/websocket) that answers every frame with a
fixed reply and relays published frames to subscribers through a bounded
queue each, doing no JSON-RPC work at all. Each figure is the median of %d
runs, alternating hub and floor; the ratio is the median of the per-run
ratios, so that the machine's drift between runs cancels out. The "runs"
column gives the lowest and the highest of those per-run ratios (the
whiskers on the chart): how far a single run on this machine may land
from the median, and so how firmly a target is met.

- Date: %s
- Machine: %s, %d CPUs, %s
- Go: %s
- Load: `+"`%s`"+`

![Ratios to the floor](%s)

| scenario | what | hub | floor | ratio | runs | target | | hub p50 | hub p99 | floor p50 | floor p99 |
| --- | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: |
`, m.Reps, m.Date, m.CPU, m.CPUs, m.OS, m.Go, m.Command, chart)
	for _, r := range results {
		verdict := r.judged("", "met", "missed")
		target := strings.NewReplacer(">=", "≥", "<=", "≤").Replace(r.targetText())
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			r.Scenario, scenarioText[r.Scenario], human(r.Hub)+" "+r.Unit, human(r.Floor)+" "+r.Unit, r.ratioText(),
			r.spreadText(), target, verdict, micros(r.HubP50), micros(r.HubP99), micros(r.FloorP50), micros(r.FloorP99))
	}
	writeRates(&b, results)
	writeCPUSection(&b, results)
	b.Write(seq)
	b.WriteString(`
The scenarios: **seq**, one connection making calls one after another;
**pipe**, one connection keeping 64 calls in flight; **conns**, 100
connections each making calls one after another; **batch**, one connection
sending batches of 100 calls (requests per second; the floor answers a
batch with one fixed reply, so this ratio is expected below 1); **fanout**,
10,000 subscribers of one topic and a publisher sending events back to back
(deliveries per second, and the latency from publish to delivery);
**idle**, the growth of the server's resident memory per idle connection,
measured once per process, first (lower is better); **client**, sequential
calls made with the Go client (` + "`client.Dial`, `Call`" + `), compared with the load
generator's own raw frames to the same hub (the "floor" column of that row);
**handoff**, the same raw frames, but read by a goroutine of their own that
hands each reply to the caller over a channel, as a client that reads the
other side's calls and events while its callers wait would: what that
hand-off costs, against the same baseline (the Go client avoids it: a call
made while no other is pending reads its own reply);
**clientpipe**, 64 goroutines calling at once through one Go client,
compared with pipe's raw frames to the same hub: when calls overlap, one
wake of the reader hands over many replies;
**neighbor**, one connection making calls one after another beside a heavy
client (8 connections with 200 calls in flight on each) in the same
process, compared with the same calls alone (the "floor" column); the load
generator's own scheduler, busy with the heavy client, weighs on this one
as much as the server does; **beside**, the same with the heavy client in
a process of its own, against the hub and against the floor;
**cluster**, two hubs joined over NATS: the fanout scenario with the
publisher on one node and the subscribers on the other, against the same
with the publisher beside its subscribers (the "floor" column), as the CPU
time of both hub processes per delivered event (lower is better);
**addressed**, sequential ` + "`rpc.call`" + ` to one chosen peer against sequential
calls of the hub's own echo (the "floor" column): it crosses the hub twice,
so 0.5 is the target; **addressed-fwd**, the same against a call forwarded
to that peer as the provider of its method: no slower; **addressed-topic**,
sequential ` + "`rpc.call`" + ` to the 1,000 peers of a topic, each done once all have
answered, against publishing to them, each done once all have the event;
**addressed-relay**, the same ` + "`rpc.call`" + ` to one peer against the floor
relaying the same frames from a caller's connection to a target's and
back, parsing nothing; **relay-floor**, that relay against the floor's
echo, both on the floor: what the machine allows a call that crosses a
server twice against one that crosses it once;
**cluster-js**, the cluster scenario with JetStream: every event goes through the
stream, on the publisher's node too; **mcp**, sequential MCP ` + "`tools/call`" + ` of a
method a peer provides (the Go SDK's client, on ` + "`/mcp`" + `) against the same call
as an HTTP POST to ` + "`/rpc`" + `, forwarded to the same peer, as the hub's CPU time per
call (lower is better; within 1.5x is the target); **mcp-list**, ` + "`tools/list`" + `
with 1,000 methods provided and described, against ` + "`rpc.discover`" + ` listing them,
as CPU time per list.

Rerun it with ` + "`make bench`" + ` (about fifteen minutes), or point the load generator
at any hub:

` + "```sh" + `
go build -o bin/ ./cmd/bench ./cmd/hub
bin/bench floor -addr 127.0.0.1:8090 &
bin/hub -addr 127.0.0.1:8080 -demo &
bin/bench run ws://127.0.0.1:8080/rpc ws://127.0.0.1:8090/
` + "```" + `

The sequential call per mode needs the servers' process ids, to pin them
(Linux: it sets their threads' CPU affinity):

` + "```sh" + `
bin/bench seqmode -pids $HUB_PID,$FLOOR_PID ws://127.0.0.1:8080/rpc ws://127.0.0.1:8090/
` + "```" + `

To tell the peer package's cost from the rest of the hub's, ` + "`bench peer`" + `
serves a bare connection with only an ` + "`echo`" + ` method, for the call
scenarios; the server's CPU time per call is then best read with
` + "`perf stat -p PID`" + ` over a run, against a fresh process each time:

` + "```sh" + `
bin/bench peer -addr 127.0.0.1:8091 &
bin/bench run -scenarios seq,pipe,conns,batch ws://127.0.0.1:8091/ ws://127.0.0.1:8090/
` + "```" + `

The floor can also be told to work on every frame, to see what the ratios
make of a given cost: ` + "`-spin 2us`" + ` spends CPU time, ` + "`-allocs 10`" + ` allocates ten
objects of 64 bytes, and ` + "`-rpc`" + ` answers as a JSON-RPC server written in a few
lines with encoding/json would. Run it beside the plain floor:

` + "```sh" + `
bin/bench floor -addr 127.0.0.1:8092 -allocs 10 &
bin/bench run -scenarios seq ws://127.0.0.1:8092/ ws://127.0.0.1:8090/
` + "```" + `

To see where a scenario's time goes, ` + "`-profiles DIR`" + ` (with ` + "`-start`" + `) also keeps
the hub's CPU profile and its allocations over each leg of each run, as
` + "`DIR/<scenario>-<hub|floor>-<run>.cpu.pprof`" + ` and ` + "`.allocs.pprof`" + `, with
` + "`.allocs-before.pprof`" + ` to give pprof as its ` + "`-diff_base`" + `:

` + "```sh" + `
bin/bench run -start bin/hub -scenarios mcp -reps 1 -duration 10s -profiles prof
go tool pprof -top bin/hub prof/mcp-hub-0.cpu.pprof
` + "```" + `

What each change to the hub did to these figures, measured before and after
it, is in [benchmarks-history.md](benchmarks-history.md).
`)
	if len(micro) > 0 {
		b.WriteString("\n## Go micro-benchmarks\n\n`go test -run '^$' -bench . -benchmem` over the packages, same machine and run:\n\n```\n")
		for _, line := range strings.Split(string(micro), "\n") {
			if strings.HasPrefix(line, "Benchmark") || strings.HasPrefix(line, "pkg:") {
				b.WriteString(line + "\n")
			}
		}
		b.WriteString("```\n")
	}
	return b.Bytes()
}

// writeRates gives, for the results whose figure is a CPU time per
// operation, the operations per second of both legs.
func writeRates(b *bytes.Buffer, results []result) {
	var parts []string
	for _, r := range results {
		if r.HubPerSecond != 0 {
			parts = append(parts, fmt.Sprintf("**%s** %s against %s", r.Scenario, human(r.HubPerSecond), human(r.FloorPerSecond)))
		}
	}
	if len(parts) > 0 {
		fmt.Fprintf(b, "\nOperations per second where the figure is a CPU time (medians, the scenario against its floor or baseline): %s.\n", strings.Join(parts, "; "))
	}
}

var scenarioText = map[string]string{
	"seq":        "sequential calls, 1 connection",
	"pipe":       "64 calls in flight, 1 connection",
	"conns":      "100 connections calling",
	"batch":      "batches of 100 calls",
	"fanout":     "events to 10,000 subscribers",
	"idle":       "memory per idle connection",
	"client":     "Go client vs raw frames, sequential",
	"handoff":    "raw frames read by a goroutine of their own",
	"clientpipe": "Go client, 64 callers, vs raw frames",
	"neighbor":   "sequential calls beside a heavy client",
	"beside":     "the same, heavy client in its own process",
	"cluster":    "fan-out across two nodes vs on one, CPU per delivery",
	"cluster-js": "the same with JetStream",

	"addressed":       "rpc.call to one peer vs a direct call",
	"addressed-fwd":   "rpc.call to one peer vs a forwarded call",
	"addressed-topic": "rpc.call to 1,000 peers vs a publish to them",
	"addressed-relay": "rpc.call to one peer vs the floor relaying it",
	"relay-floor":     "the floor: a relayed call vs an echoed one",

	"mcp":      "MCP tools/call vs a forwarded POST, CPU per call",
	"mcp-list": "MCP tools/list of 1,000 vs rpc.discover, CPU per list",
}

// ratioChart draws the ratios as horizontal bars, with each scenario's
// target marked and, where there were several runs, a whisker from the
// lowest per-run ratio to the highest, as an SVG image.
func ratioChart(results []result) []byte {
	const (
		top, rowH, barH = 40, 36, 20
		plotW           = 420
		// charW is a generous width of a character of the labels' font:
		// the label column is as wide as the longest label needs.
		charW = 7
	)
	maxRatio := 1.5
	labels := make([]string, len(results))
	longest := 0
	for i, r := range results {
		maxRatio = max(maxRatio, r.Ratio*1.1, r.RatioHigh*1.05, r.Target*1.1)
		labels[i] = scenarioText[r.Scenario]
		if r.LowerIsBetter {
			labels[i] += " (lower is better)"
		}
		longest = max(longest, utf8.RuneCountInString(labels[i]))
	}
	left := 20 + longest*charW
	width := left + plotW + 60 // room for the last figure
	x := func(v float64) float64 { return float64(left) + v/maxRatio*plotW }
	height := top + rowH*len(results) + 40
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="system-ui, sans-serif" font-size="13">
<rect width="100%%" height="100%%" fill="#fff"/>
<text x="12" y="22" font-size="15" font-weight="600">Hub / floor, same run (median; whiskers: lowest and highest run; target dashed)</text>
`, width, height, width, height)
	for v := 0.0; v <= maxRatio+1e-9; v += 0.5 {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/><text x="%.1f" y="%d" text-anchor="middle" fill="#666">%.1f</text>
`, x(v), top-6, x(v), height-30, x(v), height-14, v)
	}
	for i, r := range results {
		y := top + i*rowH
		color := r.judged("#5b7db1", "#2e8b57", "#d9534f")
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>
<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>
<text x="%.1f" y="%d">%s</text>
`, left-8, y+barH-5, html.EscapeString(labels[i]), left, y, x(r.Ratio)-x(0), barH, color,
			max(x(r.Ratio), x(r.RatioHigh))+4, y+barH-5, r.ratioText())
		if r.hasSpread() {
			mid := y + barH/2
			fmt.Fprintf(&b, `<path d="M%.1f %dV%dM%.1f %dH%.1fM%.1f %dV%d" stroke="#333" stroke-width="1.5" fill="none"/>
`, x(r.RatioLow), mid-5, mid+5, x(r.RatioLow), mid, x(r.RatioHigh), x(r.RatioHigh), mid-5, mid+5)
		}
		if r.Target != 0 {
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#000" stroke-width="2" stroke-dasharray="4 2"/>
`, x(r.Target), y-3, x(r.Target), y+barH+3)
		}
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}
