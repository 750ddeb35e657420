package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// result is one scenario's outcome over all repetitions: medians, and the
// median of the per-repetition ratios (each taken from measurements made
// back to back, so that the machine's drift cancels out), with the lowest
// and the highest of them: how far one run may land from the median.
type result struct {
	Scenario      string  `json:"scenario"`
	Unit          string  `json:"unit"`
	Hub           float64 `json:"hub"`
	Floor         float64 `json:"floor,omitempty"`
	Ratio         float64 `json:"ratio,omitempty"`
	RatioLow      float64 `json:"ratioLow,omitempty"`
	RatioHigh     float64 `json:"ratioHigh,omitempty"`
	Target        float64 `json:"target"`
	LowerIsBetter bool    `json:"lowerIsBetter,omitempty"`
	HubP50        float64 `json:"hubP50us,omitempty"`
	HubP99        float64 `json:"hubP99us,omitempty"`
	FloorP50      float64 `json:"floorP50us,omitempty"`
	FloorP99      float64 `json:"floorP99us,omitempty"`
	// The operations per second, where the figure is something else
	// (a CPU time per operation): medians.
	HubPerSecond   float64 `json:"hubPerSecond,omitempty"`
	FloorPerSecond float64 `json:"floorPerSecond,omitempty"`
	Reps           int     `json:"reps"`
	cpuResult              // cpu.go
}

// met reports whether the ratio reaches the target.
func (r *result) met() bool {
	if r.Floor == 0 || r.Target == 0 {
		return false
	}
	if r.LowerIsBetter {
		return r.Ratio <= r.Target
	}
	return r.Ratio >= r.Target
}

// meta describes the run, for the report.
type meta struct {
	Date     string `json:"date"`
	Go       string `json:"go"`
	CPUs     int    `json:"cpus"`
	CPU      string `json:"cpu"`
	OS       string `json:"os"`
	Duration string `json:"duration"`
	Reps     int    `json:"reps"`
	Command  string `json:"command"`
}

func runCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	l := &load{}
	fs.DurationVar(&l.duration, "duration", 2*time.Second, "how long each timed scenario runs")
	reps := fs.Int("reps", 5, "repetitions of each scenario (idle runs once)")
	only := fs.String("scenarios", "idle,seq,pipe,conns,batch,fanout,client,handoff,clientpipe,neighbor,beside,addressed,addressed-fwd,addressed-topic,addressed-relay,relay-floor,mcp,mcp-list", "the `list` of scenarios to run")
	fs.IntVar(&l.window, "window", 64, "calls in flight in pipe")
	fs.IntVar(&l.conns, "conns", 100, "connections in conns")
	fs.IntVar(&l.batch, "batch", 100, "requests per batch in batch")
	fs.IntVar(&l.subscribers, "subscribers", 10000, "subscribers in fanout")
	fs.IntVar(&l.events, "events", 20, "events published in fanout")
	fs.IntVar(&l.idle, "idle", 10000, "connections in idle")
	fs.IntVar(&l.dialers, "dialers", 32, "connections opened at once")
	fs.IntVar(&l.neighborConns, "neighbor-conns", 8, "connections of the heavy neighbor in neighbor")
	fs.IntVar(&l.neighborWindow, "neighbor-window", 200, "calls in flight on each of them")
	fs.IntVar(&l.addressees, "addressees", 1000, "peers of the topic in addressed-topic")
	clusterURLs := fs.String("cluster", "", "`URLs` of two hubs of one cluster, A,B, for the cluster scenario (with -start, two are started)")
	jsURLs := fs.String("cluster-js", "", "`URLs` of two hubs of one cluster with JetStream, A,B, for the cluster-js scenario (with -start, two are started)")
	jsonOut := fs.String("json", "", "also write the results as JSON lines to `file` (- for stdout)")
	start := fs.String("start", "", "start the hub `binary` (with -demo) and a floor on free loopback ports, instead of taking URLs")
	usePerf := fs.Bool("perf", true, "count every system call of the servers with perf, where it is installed and allowed (else /proc's reads and writes)")
	fs.StringVar(&l.profiles, "profiles", "", "with -start, write the hub's CPU and allocation profiles of each leg of each run into `directory` (pprof.go)")
	pids := fs.String("pids", "", "process ids of the hub and the floor, `HUB,FLOOR`, to count their CPU time per operation (with -start, known)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: bench run [flags] HUB_URL [FLOOR_URL]\n       bench run [flags] -start HUB_BINARY")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	hubURL, floorURL := fs.Arg(0), fs.Arg(1)
	switch {
	case *start != "" && fs.NArg() == 0:
		servers, err := startMetered(ctx, *start, l)
		if err != nil {
			return err
		}
		defer servers.stop()
		hubURL, floorURL = servers.hubURL, servers.floorURL
	case *start != "" || fs.NArg() < 1 || fs.NArg() > 2:
		fs.Usage()
		return fmt.Errorf("want a hub URL and, optionally, a floor URL, or -start")
	case l.profiles != "":
		return fmt.Errorf("-profiles needs -start")
	}
	if *pids != "" {
		if err := parsePIDs(*pids, hubURL, floorURL, l); err != nil {
			return err
		}
	}
	if hubPID, ok := l.pids[hubURL]; ok && *usePerf {
		l.perf = perfWorks(hubPID)
	}
	if *clusterURLs != "" {
		if err := parseCluster(*clusterURLs, &l.clusterA, &l.clusterB); err != nil {
			return err
		}
	}
	if *jsURLs != "" {
		if err := parseCluster(*jsURLs, &l.jsA, &l.jsB); err != nil {
			return err
		}
	}
	names := strings.Split(*only, ",")
	if *start != "" && !flagSet(fs, "scenarios") {
		names = append(names, "cluster", "cluster-js") // they can start their two nodes
	}
	for _, c := range []struct {
		name      string
		a         string
		jetStream bool
	}{{"cluster", l.clusterA, false}, {"cluster-js", l.jsA, true}} {
		if !slices.Contains(names, c.name) || c.a != "" {
			continue
		}
		if *start == "" {
			return errNoCluster
		}
		cluster, err := startCluster(ctx, *start, l, c.jetStream)
		if err != nil {
			return err
		}
		defer cluster.stop()
	}
	var chosen []*scenario
	for _, name := range names {
		i := slices.IndexFunc(scenarios, func(s *scenario) bool { return s.name == name })
		if i < 0 {
			return fmt.Errorf("unknown scenario %q", name)
		}
		if scenarios[i].onFloor && floorURL == "" && !flagSet(fs, "scenarios") {
			fmt.Fprintf(os.Stderr, "%s skipped: it runs on the floor, and no floor URL was given\n", name)
			continue
		}
		chosen = append(chosen, scenarios[i])
	}

	var results []result
	for _, s := range chosen {
		r, err := measure(ctx, s, l, *reps, hubURL, floorURL)
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		results = append(results, r)
		fmt.Fprintf(os.Stderr, "%-7s done\n", s.name)
	}
	printTable(os.Stdout, results)
	printCPUTable(os.Stdout, results)
	m := meta{
		Date: time.Now().UTC().Format("2006-01-02"), Go: runtime.Version(), CPUs: runtime.NumCPU(),
		CPU: cpuModel(), OS: runtime.GOOS + "/" + runtime.GOARCH, Duration: l.duration.String(), Reps: *reps,
		Command: "bench run " + strings.Join(args, " "),
	}
	return writeOut(*jsonOut, func(w io.Writer) error { return writeJSONLines(w, "meta", m, results) })
}

// writeJSONLines writes {key: m}, then each of rows, one JSON object a
// line.
func writeJSONLines[M, R any](w io.Writer, key string, m M, rows []R) error {
	enc := json.NewEncoder(w)
	if err := enc.Encode(map[string]M{key: m}); err != nil {
		return err
	}
	for _, r := range rows {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}

// writeOut calls write with file, created, or stdout for "-"; nothing
// for "".
func writeOut(file string, write func(io.Writer) error) error {
	if file == "" {
		return nil
	}
	if file == "-" {
		return write(os.Stdout)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// measure runs s against the hub and the floor, alternating which goes
// first, reps times (idle once: see idleScenario).
func measure(ctx context.Context, s *scenario, l *load, reps int, hubURL, floorURL string) (result, error) {
	if s.name == "idle" {
		reps = 1
	}
	r := result{Scenario: s.name, Unit: s.unit, Target: s.target, LowerIsBetter: s.lowerIsBetter, Reps: reps}
	var hub, floor []figure
	var ratios []float64
	// The floor's leg: the floor server, or the scenario's baseline
	// against the hub, or its floorRun against the floor server; with
	// onFloor, both legs are on the floor server.
	floorRun, floorAt := s.run, floorURL
	switch {
	case s.onFloor:
		if floorURL == "" {
			return r, fmt.Errorf("%s runs on the floor: give a floor URL", s.name)
		}
		hubURL, floorRun = floorURL, s.baseline
	case s.baseline != nil:
		floorRun, floorAt = s.baseline, hubURL
	case s.floorRun != nil:
		floorRun = s.floorRun
	}
	withFloor := floorURL != "" || s.baseline != nil
	for i := range reps {
		var h, f figure
		var err error
		hubLeg, floorLeg := l.profiled(s.name, "hub", i, s.run), l.profiled(s.name, "floor", i, floorRun)
		if i%2 == 1 && withFloor {
			if f, err = runMetered(ctx, floorLeg, l, floorAt); err != nil {
				return r, fmt.Errorf("floor: %w", err)
			}
		}
		if h, err = runMetered(ctx, hubLeg, l, hubURL); err != nil {
			return r, fmt.Errorf("hub: %w", err)
		}
		if i%2 == 0 && withFloor {
			if f, err = runMetered(ctx, floorLeg, l, floorAt); err != nil {
				return r, fmt.Errorf("floor: %w", err)
			}
		}
		hub = append(hub, h)
		if withFloor {
			floor = append(floor, f)
			if f.value != 0 {
				ratios = append(ratios, h.value/f.value)
			}
		}
	}
	r.Hub, r.HubP50, r.HubP99 = medians(hub)
	r.HubPerSecond, r.FloorPerSecond = otherRate(hub), otherRate(floor)
	if withFloor {
		r.Floor, r.FloorP50, r.FloorP99 = medians(floor)
		r.Ratio = median(ratios)
		if len(ratios) > 0 {
			r.RatioLow, r.RatioHigh = slices.Min(ratios), slices.Max(ratios)
		}
	}
	r.cpuResult = cpuOf(s.name, hub, floor)
	return r, nil
}

// ratioText is the ratio with two decimals, or as many more as it takes
// for the figure shown to be on the same side of the target as the ratio
// itself: 0.9997 is "0.9997", not a "1.00" that missed a target of 1.0.
func (r *result) ratioText() string {
	for d := 2; ; d++ {
		s := strconv.FormatFloat(r.Ratio, 'f', d, 64)
		shown, _ := strconv.ParseFloat(s, 64)
		if r.Target == 0 || d >= 6 {
			return s
		}
		shownMet := shown >= r.Target
		if r.LowerIsBetter {
			shownMet = shown <= r.Target
		}
		if shownMet == r.met() {
			return s
		}
	}
}

// hasSpread reports whether r has a lowest and a highest per-run ratio
// to show: it ran several times, against a floor.
func (r *result) hasSpread() bool { return r.Reps > 1 && r.RatioLow != 0 }

// spreadText is the lowest and the highest per-run ratio, as "0.91-1.02",
// when there were several runs; else "-".
func (r *result) spreadText() string {
	if !r.hasSpread() {
		return "-"
	}
	return fmt.Sprintf("%.2f-%.2f", r.RatioLow, r.RatioHigh)
}

// targetText says the target, as ">= 0.9" or "<= 1.2", or "-" for none.
func (r *result) targetText() string {
	switch {
	case r.Target == 0:
		return "-"
	case r.LowerIsBetter:
		return fmt.Sprintf("<= %.1f", r.Target)
	}
	return fmt.Sprintf(">= %.1f", r.Target)
}

func medians(figs []figure) (value, p50, p99 float64) {
	var v, a, b []float64
	for _, f := range figs {
		v = append(v, f.value)
		a = append(a, float64(f.p50.Nanoseconds())/1e3)
		b = append(b, float64(f.p99.Nanoseconds())/1e3)
	}
	return median(v), median(a), median(b)
}

// otherRate is the median operations per second of figs, or 0 where the
// figures are the rate itself.
func otherRate(figs []figure) float64 {
	var v []float64
	for _, f := range figs {
		if f.perSecond == f.value {
			return 0
		}
		v = append(v, f.perSecond)
	}
	return median(v)
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	v = slices.Clone(v)
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func printTable(w io.Writer, results []result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tunit\thub\tfloor\tratio\truns\ttarget\t\thub p50\thub p99\tfloor p50\tfloor p99\t")
	for _, r := range results {
		ratio, spread, verdict := "-", "-", ""
		if r.Floor != 0 {
			ratio, spread = r.ratioText(), r.spreadText()
		}
		if r.Floor != 0 && r.Target != 0 {
			verdict = "missed"
			if r.met() {
				verdict = "met"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n",
			r.Scenario, r.Unit, human(r.Hub), human(r.Floor), ratio, spread, r.targetText(), verdict,
			micros(r.HubP50), micros(r.HubP99), micros(r.FloorP50), micros(r.FloorP99))
	}
	tw.Flush()
}

// human prints n with thousands separators.
func human(n float64) string {
	if n == 0 {
		return "-"
	}
	s := fmt.Sprintf("%.0f", n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func micros(us float64) string {
	switch {
	case us == 0:
		return "-"
	case us >= 10000:
		return fmt.Sprintf("%.1f ms", us/1000)
	}
	return fmt.Sprintf("%.0f µs", us)
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		out, _ := exec.Command("uname", "-m").Output()
		return strings.TrimSpace(string(out))
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

// flagSet reports whether the flag name was given.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
