package main

// bench seqmode measures the sequential call (the seq scenario) per
// placement mode. A sequential call runs in one of two modes, chosen by
// where the load generator and the server run (place.go): taking turns on
// one CPU (fast, and cheap per call), or each on a CPU of its own, where
// every call wakes an idle CPU and each Go runtime spins and polls before
// it sleeps (slower, and about twice the CPU time per call, on the floor
// as on the hub). A median over runs that landed in different modes
// compares modes, not servers. So seqmode pins both programs to one CPU,
// then to two, and also leaves them free, tagging each free run with the
// mode observed; it alternates hub and floor run by run, reports the
// machine's load beside each run, and judges hub against floor within
// each mode.

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// seqRep is one run of the seq scenario, tagged with its placement.
type seqRep struct {
	Placement string  `json:"placement"` // asked: one, two, or free
	Mode      string  `json:"mode"`      // observed: modeOne, modeTwo or modeMixed
	OneShare  float64 `json:"oneShare"`  // share of samples with both programs on one CPU
	Server    string  `json:"server"`    // hub or floor
	Rep       int     `json:"rep"`
	Rate      float64 `json:"callsPerSec"`
	P50       float64 `json:"p50us"`
	P99       float64 `json:"p99us"`
	CPU       float64 `json:"cpuPerCallUs"` // the server's, user and system
	Switches  float64 `json:"switchesPerCall"`
	// GenCPU and GenSwitches are the load generator's own CPU time (µs)
	// and context switches per call: the same program against either
	// server, so a mark of the mode that the server under test does not
	// set.
	GenCPU      float64 `json:"genCPUPerCallUs"`
	GenSwitches float64 `json:"genSwitchesPerCall"`
	Others      float64 `json:"othersBusy"` // share of the machine's CPU time spent by other processes
	Steal       float64 `json:"steal"`      // share stolen by the hypervisor
}

// placements are what seqmode can ask for: where the load generator and
// the server may run, given two CPUs a and b.
var placements = map[string]func(a, b string) (gen, server string){
	"one":  func(a, _ string) (string, string) { return a, a },
	"two":  func(a, b string) (string, string) { return a, b },
	"free": func(string, string) (string, string) { return allCPUs(), allCPUs() },
}

// seqMeta describes a seqmode run.
type seqMeta struct {
	Date     string  `json:"date"`
	CPUs     int     `json:"cpus"`
	CPU      string  `json:"cpu"`
	Duration string  `json:"duration"`
	Reps     int     `json:"reps"`
	MaxProcs string  `json:"maxProcs"` // keep or follow
	LoadFrom float64 `json:"loadFrom"` // the one-minute load average at the start
	LoadTo   float64 `json:"loadTo"`   // and at the end
	Command  string  `json:"command"`
}

func seqModeCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("seqmode", flag.ContinueOnError)
	l := &load{dialers: 1}
	fs.DurationVar(&l.duration, "duration", time.Second, "how long each run lasts")
	reps := fs.Int("reps", 12, "runs of each server in each placement, hub and floor alternating which goes first")
	only := fs.String("placements", "one,two,free", "the `list` of placements: one (both programs pinned to one CPU), two (one CPU each), free (unpinned, each run tagged with the mode observed)")
	cpus := fs.String("cpus", "0,1", "the two `CPUs` to pin to, A,B: one puts both on A, two the load generator on A and the server on B")
	start := fs.String("start", "", "start the hub `binary` (with -demo) and a floor on free loopback ports, instead of taking URLs")
	pids := fs.String("pids", "", "process ids of the hub and the floor, `HUB,FLOOR` (with -start, known)")
	maxProcs := fs.String("maxprocs", "keep", "keep: GOMAXPROCS stays at the number of CPUs in the load generator and the servers it starts, as in a free placement (servers named by -pids keep their own setting); follow: Go's runtime follows the pinning (GOMAXPROCS=1 on one CPU)")
	jsonOut := fs.String("json", "", "also write every run as JSON lines to `file` (- for stdout)")
	mdOut := fs.String("md", "", "also write the section of the benchmarks page on these runs to `file` (- for stdout)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: bench seqmode [flags] -pids HUB,FLOOR HUB_URL FLOOR_URL\n       bench seqmode [flags] -start HUB_BINARY")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	hubURL, floorURL := fs.Arg(0), fs.Arg(1)
	switch *maxProcs {
	case "keep":
		// A GOMAXPROCS set by hand, or in the environment of the
		// servers started, is not updated by the runtime.
		n := runtime.NumCPU()
		runtime.GOMAXPROCS(n)
		if err := os.Setenv("GOMAXPROCS", strconv.Itoa(n)); err != nil {
			return err
		}
	case "follow":
	default:
		return fmt.Errorf("-maxprocs %q: want keep or follow", *maxProcs)
	}
	switch {
	case *start != "" && fs.NArg() == 0:
		servers, err := startMetered(ctx, *start, l)
		if err != nil {
			return err
		}
		defer servers.stop()
		hubURL, floorURL = servers.hubURL, servers.floorURL
	case *start == "" && fs.NArg() == 2 && *pids != "":
		if err := parsePIDs(*pids, hubURL, floorURL, l); err != nil {
			return err
		}
	default:
		fs.Usage()
		return fmt.Errorf("want -start, or a hub URL, a floor URL and -pids: runs are placed by process")
	}
	a, b, ok := strings.Cut(*cpus, ",")
	if !ok {
		return fmt.Errorf("-cpus %q: want A,B", *cpus)
	}
	names := strings.Split(*only, ",")
	for _, p := range names {
		if placements[p] == nil {
			return fmt.Errorf("unknown placement %q", p)
		}
	}
	m := seqMeta{
		Date: time.Now().UTC().Format("2006-01-02 15:04 MST"), CPUs: runtime.NumCPU(), CPU: cpuModel(),
		Duration: l.duration.String(), Reps: *reps, MaxProcs: *maxProcs, LoadFrom: loadAverage(),
		Command: "bench seqmode " + strings.Join(args, " "),
	}
	servers := []struct{ name, url string }{{"hub", hubURL}, {"floor", floorURL}}
	var runs []seqRep
	defer unpin(l)
	for _, p := range names {
		gen, srv := placements[p](a, b)
		if err := placeAll(l, gen, srv); err != nil {
			return err
		}
		select {
		case <-time.After(settle):
		case <-ctx.Done():
			return ctx.Err()
		}
		for i := range *reps {
			for j := range servers {
				s := servers[(i+j)%2] // hub first in even runs, floor first in odd ones
				r, err := seqRun(ctx, l, s.url)
				if err != nil {
					return fmt.Errorf("%s, %s placement: %w", s.name, p, err)
				}
				r.Placement, r.Server, r.Rep = p, s.name, i
				runs = append(runs, r)
				fmt.Fprintf(os.Stderr, "%-4s %-5s %2d  %6.0f calls/s  p50 %4.0f µs  CPU %5.1f µs/call, %4.2f switches  load generator %5.1f µs, %4.2f  %-8s (one CPU %3.0f%%)  others %3.0f%%  steal %2.0f%%\n",
					p, s.name, i, r.Rate, r.P50, r.CPU, r.Switches, r.GenCPU, r.GenSwitches, r.Mode, 100*r.OneShare, 100*r.Others, 100*r.Steal)
			}
		}
	}
	m.LoadTo = loadAverage()
	modes := summarize(runs)
	printSeqModes(os.Stdout, m, modes)
	if err := writeOut(*jsonOut, func(w io.Writer) error { return writeJSONLines(w, "seqMeta", m, runs) }); err != nil {
		return err
	}
	return writeOut(*mdOut, func(w io.Writer) error {
		writeSeqSection(w, m, modes)
		return nil
	})
}

// settle is how long a placement is left to take hold before a run: Go's
// runtime (1.25 on) re-reads the CPUs it may use about once a second and
// sets GOMAXPROCS to their number, so a program pinned to one CPU runs
// with GOMAXPROCS=1 a second later, and with all of them again once freed
// (unless GOMAXPROCS was set, as -maxprocs keep does).
const settle = 1500 * time.Millisecond

// placeAll pins this process to gen and both servers to server.
func placeAll(l *load, gen, server string) error {
	if err := pin(os.Getpid(), gen); err != nil {
		return err
	}
	for _, pid := range l.pids {
		if err := pin(pid, server); err != nil {
			return err
		}
	}
	return nil
}

// unpin lets this process and the servers run on every CPU again.
func unpin(l *load) {
	all := allCPUs()
	_ = placeAll(l, all, all)
}

// seqRun runs the seq scenario once against u, counting the server's
// usage, the machine's, and the placement observed meanwhile.
func seqRun(ctx context.Context, l *load, u string) (seqRep, error) {
	var r seqRep
	pid := l.pids[u]
	self, err := readUsage(os.Getpid())
	if err != nil {
		return r, err
	}
	mach, err := readMachine()
	if err != nil {
		return r, err
	}
	watchCtx, stop := context.WithCancel(ctx)
	samples := watchPlacement(watchCtx, pid)
	f, err := runMetered(ctx, seqScenario, l, u)
	stop()
	s := samples()
	if err != nil {
		return r, err
	}
	self2, err := readUsage(os.Getpid())
	if err != nil {
		return r, err
	}
	mach2, err := readMachine()
	if err != nil {
		return r, err
	}
	r.Mode, r.OneShare = runMode(s)
	r.Rate, r.P50, r.P99 = f.value, micros64(f.p50), micros64(f.p99)
	r.CPU, r.Switches, _, _ = perOp(f, false)
	r.GenCPU, r.GenSwitches, _, _ = perOp(figure{ops: f.ops, used: self2.sub(self), metered: true}, false)
	if all := mach2.all - mach.all; all > 0 {
		ours := (self2.cpu - self.cpu + f.used.cpu) / clockTick
		r.Others = max(0, float64(mach2.busy-mach.busy-int64(ours))/float64(all))
		r.Steal = float64(mach2.steal-mach.steal) / float64(all)
	}
	return r, nil
}

func micros64(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// The targets of the sequential call, hub against floor in each mode.
const (
	seqRateTarget = 0.9  // throughput, at least
	seqP50Target  = 1.5  // median latency, at most
	seqCPUTarget  = 1.25 // server CPU time per call, at most
)

// seqMode is the runs of one mode: a placement asked for, and the mode
// observed. Figures are medians over the mode's runs of each server;
// ratios are those of the medians, hub over floor, and RatioLow and
// RatioHigh the lowest and highest throughput ratio of a run of the hub
// and the run of the floor beside it, where both landed in this mode.
type seqMode struct {
	Placement, Mode     string
	HubRuns, FloorRuns  int
	Hub, Floor          float64 // calls/s
	HubP50, FloorP50    float64 // µs
	HubCPU, FloorCPU    float64 // µs per call
	HubSw, FloorSw      float64 // switches per call
	GenSw               float64 // the load generator's switches per call, over all the mode's runs
	Ratio, P50Ratio     float64
	CPURatio            float64
	RatioLow, RatioHigh float64
	Others, Steal       float64 // medians over the mode's runs
}

// label names the mode for a table: "one CPU, pinned", "free: two CPUs".
func (m *seqMode) label() string {
	if m.Placement == "free" {
		return "free: " + m.Mode
	}
	return m.Mode + ", pinned to " + m.Placement
}

// verdict says whether the mode meets the three targets, or which it
// misses; "" without the three ratios.
func (m *seqMode) verdict() string {
	if m.Ratio == 0 || m.P50Ratio == 0 || m.CPURatio == 0 {
		return ""
	}
	var missed []string
	if m.Ratio < seqRateTarget {
		missed = append(missed, "throughput")
	}
	if m.P50Ratio > seqP50Target {
		missed = append(missed, "p50")
	}
	if m.CPURatio > seqCPUTarget {
		missed = append(missed, "CPU")
	}
	if len(missed) == 0 {
		return "met"
	}
	return "missed " + strings.Join(missed, ", ")
}

// summarize groups runs by placement and observed mode, in the order met.
func summarize(runs []seqRep) []seqMode {
	type key struct{ placement, mode string }
	var keys []key
	groups := map[key][]seqRep{}
	for _, r := range runs {
		k := key{r.Placement, r.Mode}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], r)
	}
	var modes []seqMode
	for _, k := range keys {
		m := seqMode{Placement: k.placement, Mode: k.mode}
		var hub, floor []seqRep
		var others, steal, gen []float64
		for _, r := range groups[k] {
			if r.Server == "hub" {
				hub = append(hub, r)
			} else {
				floor = append(floor, r)
			}
			others, steal, gen = append(others, r.Others), append(steal, r.Steal), append(gen, r.GenSwitches)
		}
		m.HubRuns, m.FloorRuns = len(hub), len(floor)
		m.Hub, m.HubP50, m.HubCPU, m.HubSw = repMedians(hub)
		m.Floor, m.FloorP50, m.FloorCPU, m.FloorSw = repMedians(floor)
		m.Others, m.Steal, m.GenSw = median(others), median(steal), median(gen)
		m.Ratio, m.P50Ratio, m.CPURatio = ratioOf(m.Hub, m.Floor), ratioOf(m.HubP50, m.FloorP50), ratioOf(m.HubCPU, m.FloorCPU)
		var ratios []float64
		for _, h := range hub {
			i := slices.IndexFunc(floor, func(f seqRep) bool { return f.Rep == h.Rep })
			if i >= 0 && floor[i].Rate > 0 {
				ratios = append(ratios, h.Rate/floor[i].Rate)
			}
		}
		if len(ratios) > 0 {
			m.RatioLow, m.RatioHigh = slices.Min(ratios), slices.Max(ratios)
		}
		modes = append(modes, m)
	}
	return modes
}

// ratioOf is a / b, or 0 (no ratio) if either is 0: a run too starved to
// complete a call, or to be counted a tick of CPU time, has no figure.
func ratioOf(a, b float64) float64 {
	if a == 0 || b == 0 {
		return 0
	}
	return a / b
}

// repMedians returns the medians of runs' rates, p50s, CPU and switches
// per call.
func repMedians(runs []seqRep) (rate, p50, cpu, switches float64) {
	var a, b, c, d []float64
	for _, r := range runs {
		a, b, c, d = append(a, r.Rate), append(b, r.P50), append(c, r.CPU), append(d, r.Switches)
	}
	return median(a), median(b), median(c), median(d)
}

// seqHeader is the per-mode table's header, seqCells a row's cells.
var seqHeader = []string{"mode", "runs", "hub", "floor", "ratio", "pairs", "hub p50", "floor p50", "p50 ratio",
	"hub CPU/call", "floor CPU/call", "CPU ratio", "hub sw/call", "floor sw/call", "gen sw/call", "others", "steal", "targets"}

func (m *seqMode) cells() []string {
	pairs := "-"
	if m.RatioHigh != 0 {
		pairs = fmt.Sprintf("%.2f-%.2f", m.RatioLow, m.RatioHigh)
	}
	ratio := func(v float64) string { return orDash(v, "%.2f") }
	return []string{m.label(), fmt.Sprintf("%d+%d", m.HubRuns, m.FloorRuns), human(m.Hub), human(m.Floor),
		ratio(m.Ratio), pairs, micros(m.HubP50), micros(m.FloorP50), ratio(m.P50Ratio),
		orDash(m.HubCPU, "%.1f µs"), orDash(m.FloorCPU, "%.1f µs"), ratio(m.CPURatio),
		orDash(m.HubSw, "%.2f"), orDash(m.FloorSw, "%.2f"), orDash(m.GenSw, "%.2f"),
		fmt.Sprintf("%.0f%%", 100*m.Others), fmt.Sprintf("%.0f%%", 100*m.Steal), m.verdict()}
}

func printSeqModes(w io.Writer, m seqMeta, modes []seqMode) {
	fmt.Fprintf(w, "load average %.2f at the start, %.2f at the end; %d runs of %s per server and placement\n",
		m.LoadFrom, m.LoadTo, m.Reps, m.Duration)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	for _, row := range append([][]string{seqHeader}, seqRows(modes)...) {
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	tw.Flush()
}

func seqRows(modes []seqMode) [][]string {
	var rows [][]string
	for i := range modes {
		rows = append(rows, modes[i].cells())
	}
	return rows
}

// writeSeqSection writes the section of the benchmarks page on the
// sequential call per mode: what selects the mode, how it is measured,
// and the table, with the machine's load.
func writeSeqSection(w io.Writer, m seqMeta, modes []seqMode) {
	fmt.Fprint(w, `
## The sequential call, per mode

A sequential call spends most of its time waiting for the other side, and
how that wait is served decides its cost more than either program does.
Each run lands in one of two modes, on the floor as on the hub:

- **one CPU**: the load generator and the server take turns on one CPU.
  Writing a frame makes the reader runnable on the same CPU, which runs it
  when the writer blocks on its own read; no CPU goes idle.
- **two CPUs**: each runs on a CPU of its own, and each CPU goes idle once
  per call. The Go runtime of the side that waits first looks for work (it
  spins, polls the network without blocking, sleeps a few µs in its
  monitor), then blocks in epoll_pwait, and the CPU halts; the next frame
  wakes it, on a virtual machine through the hypervisor. The call takes
  longer and costs each process about twice the CPU time, on the floor as
  on the hub.

Left free, Linux's scheduler picks the placement (its wake-affine rule
pulls a woken thread to the waker's CPU when that looks cheap) and keeps it
for a while, so a run lands in one mode and a median over a few runs
compares modes, not servers. Go's runtime (1.25 on) follows the CPUs a
process may use: pinned to one CPU, it sets GOMAXPROCS to 1 a second later.

`+"`bench seqmode`"+` pins the load generator and both servers (sched_setaffinity) to
one CPU, then the load generator to one and the servers to another, then
leaves them free and tags each free run with the placement observed
(every 10 ms, the CPU each busy thread last ran on): a run is in one mode
when four samples in five say so, else mixed. Mixed says that the threads
of both programs ran on both CPUs within a sample: two programs that move
from CPU to CPU together look the same as two that do not share one. Hub
and floor alternate run by run, and each mode is judged on its own runs:
throughput ≥ 0.9, p50 ≤ 1.5x, server CPU per call ≤ 1.25x. "runs" counts
the hub's and the floor's; "pairs" is the lowest and highest throughput
ratio of a hub run and the floor run beside it in the same mode; "gen
sw/call" is the load generator's own context switches per call, the same
program against either server (about 1.2 to 1.5 on one CPU, 2 on two: a
mark of the mode that the server under test does not set); "others" is the
share of the machine's CPU time spent by other processes during the mode's
runs, and "steal" the share the hypervisor took (medians). A run pinned to
one CPU shares it with whatever else the machine runs there: on a busy
machine its throughput says as much about the neighbours as about the
server, while its CPU time per call holds better.

`)
	fmt.Fprintf(w, "- Date: %s; %d CPUs, %s\n", m.Date, m.CPUs, m.CPU)
	fmt.Fprintf(w, "- Load: `%s`: %d runs of %s per server and placement, GOMAXPROCS: %s\n", m.Command, m.Reps, m.Duration, m.MaxProcs)
	fmt.Fprintf(w, "- Machine: load average %.2f at the start, %.2f at the end", m.LoadFrom, m.LoadTo)
	if max(m.LoadFrom, m.LoadTo) > float64(m.CPUs) {
		fmt.Fprint(w, ": busy, more runnable work than CPUs, so other programs competed with these runs")
	}
	fmt.Fprint(w, "\n\n")
	fmt.Fprintf(w, "| %s |\n| --- |%s\n", strings.Join(seqHeader, " | "), strings.Repeat(" ---: |", len(seqHeader)-1))
	for _, row := range seqRows(modes) {
		fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
	}
}

// readSeqRuns reads what seqmode -json wrote.
func readSeqRuns(path string) (seqMeta, []seqRep, error) {
	var m seqMeta
	b, err := os.ReadFile(path)
	if err != nil {
		return m, nil, err
	}
	var runs []seqRep
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		if bytes.HasPrefix(line, []byte(`{"seqMeta"`)) {
			var w map[string]seqMeta
			if err := json.Unmarshal(line, &w); err != nil {
				return m, nil, fmt.Errorf("%s: %w", path, err)
			}
			m = w["seqMeta"]
			continue
		}
		var r seqRep
		if err := json.Unmarshal(line, &r); err != nil {
			return m, nil, fmt.Errorf("%s: %w", path, err)
		}
		runs = append(runs, r)
	}
	return m, runs, nil
}
