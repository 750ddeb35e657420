package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// The second ratio: what each operation costs the server process, read
// from /proc before and after each run (see proc.go), hub against floor.
// Throughput alone moves with the machine's mood: on a day when system
// calls are slow the hub keeps up with the floor, on a day when they are
// fast it does not; the CPU time per operation says what the hub spends
// whatever the day. It is counted for servers whose process id bench run
// knows: those it started (-start), or those named by -pids.

// cpuTargets are the highest CPU ratios (hub / floor, per operation) to
// reach: per call, per request of a batch, per delivery of a fan-out.
var cpuTargets = map[string]float64{"seq": 1.25, "conns": 1.2, "pipe": 1.0, "batch": 2.0, "fanout": 1.1}

// cpuResult is the CPU side of a result: medians over the runs of the
// server's CPU time (µs), context switches and read/write system calls per
// operation, the median per-run CPU ratio with its lowest and highest, and
// the floor's best (lowest) CPU per operation of any run.
type cpuResult struct {
	HubCPU       float64 `json:"hubCPUus,omitempty"`
	FloorCPU     float64 `json:"floorCPUus,omitempty"`
	FloorCPUBest float64 `json:"floorCPUBestus,omitempty"`
	CPURatio     float64 `json:"cpuRatio,omitempty"`
	CPURatioLow  float64 `json:"cpuRatioLow,omitempty"`
	CPURatioHigh float64 `json:"cpuRatioHigh,omitempty"`
	CPUTarget    float64 `json:"cpuTarget,omitempty"`
	HubSwitches  float64 `json:"hubSwitches,omitempty"`
	FloorSwitch  float64 `json:"floorSwitches,omitempty"`
	HubSyscalls  float64 `json:"hubSyscalls,omitempty"`
	FloorSyscall float64 `json:"floorSyscalls,omitempty"`
	AllSyscalls  bool    `json:"allSyscalls,omitempty"` // counted by perf, not /proc's reads and writes
}

// runMetered runs a scenario against u and, if the scenario did not count
// the server's procUsage itself and u's process is known, counts it over the
// whole run.
func runMetered(ctx context.Context, run func(context.Context, *load, string) (figure, error), l *load, u string) (figure, error) {
	pid, ok := l.pids[u]
	if !ok {
		return run(ctx, l, u)
	}
	var perf *perfCounter
	if l.perf {
		var err error
		if perf, err = startPerf(pid); err != nil {
			return figure{}, err
		}
	}
	before, err := readUsage(pid)
	if err != nil {
		return figure{}, err
	}
	f, err := run(ctx, l, u)
	if err != nil || f.metered {
		if perf != nil {
			_, _ = perf.stop()
		}
		return f, err
	}
	after, err := readUsage(pid)
	if err != nil {
		return figure{}, err
	}
	f.used, f.metered = after.sub(before), true
	if perf != nil {
		// On a loaded machine perf may not have attached yet when told to
		// stop: then /proc's reads and writes stand for this run.
		if n, err := perf.stop(); err == nil {
			f.perfSyscalls, f.perf = n, true
		}
	}
	return f, nil
}

// meteredFanout is fanoutScenario counting the server's usage from the
// first publish to the last delivery, without the subscribers' handshakes.
func meteredFanout(ctx context.Context, l *load, u string, pid int) (figure, error) {
	var used []procUsage
	meter := func(context.Context) (float64, error) {
		u, err := readUsage(pid)
		used = append(used, u)
		return 0, err
	}
	f, _, err := fanout(ctx, l, u, u, meter)
	if err == nil {
		f.used, f.metered = used[1].sub(used[0]), true
	}
	return f, err
}

// perOp is a figure's usage per operation: CPU in µs, switches, and
// system calls: all of them if perf counted them (allSyscalls), else the
// reads and writes.
func perOp(f figure, allSyscalls bool) (cpu, switches, syscalls float64, ok bool) {
	if !f.metered || f.ops == 0 {
		return 0, 0, 0, false
	}
	n := float64(f.ops)
	calls := f.used.syscalls
	if allSyscalls {
		calls = f.perfSyscalls
	}
	return float64(f.used.cpu.Nanoseconds()) / 1e3 / n, float64(f.used.voluntary+f.used.involuntary) / n, float64(calls) / n, true
}

// cpuOf sums up the procUsage of the runs of scenario name.
func cpuOf(name string, hub, floor []figure) cpuResult {
	var c cpuResult
	// Every system call, if perf counted those of every run.
	metered, perf := 0, 0
	for _, f := range append(slices.Clone(hub), floor...) {
		if f.metered {
			metered++
		}
		if f.perf {
			perf++
		}
	}
	c.AllSyscalls = metered > 0 && perf == metered
	var hc, hs, hy, fc, fs, fy, ratios []float64
	for i, h := range hub {
		cpu, sw, sy, ok := perOp(h, c.AllSyscalls)
		if !ok {
			continue
		}
		hc, hs, hy = append(hc, cpu), append(hs, sw), append(hy, sy)
		if i >= len(floor) {
			continue
		}
		fcpu, fsw, fsy, ok := perOp(floor[i], c.AllSyscalls)
		if !ok || fcpu == 0 {
			continue
		}
		fc, fs, fy = append(fc, fcpu), append(fs, fsw), append(fy, fsy)
		ratios = append(ratios, cpu/fcpu)
	}
	c.HubCPU, c.HubSwitches, c.HubSyscalls = median(hc), median(hs), median(hy)
	c.FloorCPU, c.FloorSwitch, c.FloorSyscall = median(fc), median(fs), median(fy)
	if len(ratios) > 0 {
		c.CPURatio = median(ratios)
		c.CPURatioLow, c.CPURatioHigh = slices.Min(ratios), slices.Max(ratios)
		c.FloorCPUBest = slices.Min(fc)
		c.CPUTarget = cpuTargets[name]
	}
	return c
}

// cpuRatioText is the CPU ratio with two decimals, or more if it takes
// them for the figure shown to be on the same side of the target.
func (c *cpuResult) cpuRatioText() string {
	r := result{Ratio: c.CPURatio, Target: c.CPUTarget, LowerIsBetter: true, Floor: 1}
	return r.ratioText()
}

// cpuVerdict is "met", "missed", or "" without a target or a ratio.
func (c *cpuResult) cpuVerdict() string {
	switch {
	case c.CPUTarget == 0 || c.CPURatio == 0:
		return ""
	case c.CPURatio <= c.CPUTarget:
		return "met"
	}
	return "missed"
}

// cpuRows are the results with a CPU figure, with each row's cells: the
// scenario, the hub's and floor's CPU per operation, the floor's best,
// the ratio, its spread, the target and verdict, switches and system
// calls per operation, hub then floor.
func cpuRows(results []result) [][]string {
	var rows [][]string
	for _, r := range results {
		c := r.cpuResult
		// A scenario measured in CPU already (cluster, cluster-js) reads
		// its nodes' own CPU time: the figures of the hub started for the
		// other scenarios, idle meanwhile, would say nothing.
		if c.HubCPU == 0 || strings.Contains(r.Unit, "CPU") {
			continue
		}
		ratio, spread, target, best := "-", "-", "-", "-"
		if c.CPURatio != 0 {
			ratio = c.cpuRatioText()
			spread = fmt.Sprintf("%.2f-%.2f", c.CPURatioLow, c.CPURatioHigh)
			best = fmt.Sprintf("%.2f µs", c.FloorCPUBest)
		}
		if c.CPUTarget != 0 {
			target = fmt.Sprintf("<= %.2f", c.CPUTarget)
		}
		throughput := "-"
		if r.Floor != 0 {
			throughput = r.ratioText()
		}
		rows = append(rows, []string{r.Scenario, fmt.Sprintf("%.2f µs", c.HubCPU), orDash(c.FloorCPU, "%.2f µs"), best,
			ratio, spread, target, c.cpuVerdict(), throughput,
			fmt.Sprintf("%.2f", c.HubSwitches), orDash(c.FloorSwitch, "%.2f"),
			fmt.Sprintf("%.2f", c.HubSyscalls) + syscallMark(c), orDash(c.FloorSyscall, "%.2f")})
	}
	return rows
}

// syscallMark marks the system calls counted from /proc's reads and writes
// alone, beside those perf counted in full.
func syscallMark(c cpuResult) string {
	if c.AllSyscalls {
		return ""
	}
	return " (r/w)"
}

func orDash(v float64, format string) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf(format, v)
}

var cpuHeader = []string{"scenario", "hub CPU/op", "floor CPU/op", "floor best", "CPU ratio", "runs", "target", "", "throughput ratio",
	"hub switches/op", "floor switches/op", "hub syscalls/op", "floor syscalls/op"}

// printCPUTable prints the CPU side of the results, if any was counted.
func printCPUTable(w io.Writer, results []result) {
	rows := cpuRows(results)
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	for _, row := range append([][]string{cpuHeader}, rows...) {
		for _, cell := range row {
			fmt.Fprintf(tw, "%s\t", cell)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}

// writeCPUSection writes the CPU side of the results as Markdown.
func writeCPUSection(b *bytes.Buffer, results []result) {
	rows := cpuRows(results)
	if len(rows) == 0 {
		return
	}
	b.WriteString(`
The server's cost per operation (per call; per request of a batch; per
delivery of a fan-out), read from /proc over each run: CPU time (user and
system, in ticks of 10 ms, over runs of about a second of it), context
switches of all its threads (voluntary and not), and system calls: all of
them, counted by ` + "`perf stat -e raw_syscalls:sys_enter`" + ` where perf may trace
the server, else the reads and writes /proc counts, marked "(r/w)"; the
fan-out's are always those (perf attaches to the whole run, and the
fan-out's is counted from its first publish to its last delivery). The ratio is the
median of the per-run ratios of CPU time, lower is better; "floor best" is
the floor's cheapest run, since the floor's own figure swings from run to
run; the throughput ratio of the table above is repeated beside it.

`)
	header := slices.Clone(cpuHeader)
	header[6] = "target"
	fmt.Fprintf(b, "| %s |\n", joinCells(header))
	b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |\n")
	for _, row := range rows {
		if row[6] != "-" {
			row[6] = "≤" + row[6][2:]
		}
		fmt.Fprintf(b, "| %s |\n", joinCells(row))
	}
}

func joinCells(cells []string) string {
	var b bytes.Buffer
	for i, c := range cells {
		if i > 0 {
			b.WriteString(" | ")
		}
		b.WriteString(c)
	}
	return b.String()
}

// parsePIDs reads -pids: the hub's process id and, with a floor, the
// floor's.
func parsePIDs(s, hubURL, floorURL string, l *load) error {
	var hub, floor int
	n, _ := fmt.Sscanf(s, "%d,%d", &hub, &floor)
	if n == 0 || (n == 1 && floorURL != "") {
		return fmt.Errorf("-pids %q: want HUB_PID,FLOOR_PID", s)
	}
	l.pids = map[string]int{hubURL: hub}
	if floorURL != "" {
		l.pids[floorURL] = floor
	}
	return nil
}
