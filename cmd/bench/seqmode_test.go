package main

import (
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/server"
	"github.com/switchboard-rpc/switchboard/server/demo"

	"golang.org/x/sys/unix"
)

func TestSampleMode(t *testing.T) {
	tests := []struct {
		gen, srv cpuSet
		want     string
	}{
		{cpuSet{1}, cpuSet{1}, modeOne},
		{cpuSet{0}, cpuSet{1}, modeTwo},
		{cpuSet{1}, cpuSet{0}, modeTwo},
		{cpuSet{0, 1}, cpuSet{1}, modeMixed}, // the generator ran on both: one of them with the server
		{cpuSet{0, 1}, cpuSet{0, 1}, modeMixed},
		{cpuSet{0, 1}, cpuSet{2, 3}, modeTwo},
		{nil, cpuSet{1}, ""}, // the generator did not run: nothing seen
		{cpuSet{1}, nil, ""},
	}
	for _, tt := range tests {
		if got := sampleMode(tt.gen, tt.srv); got != tt.want {
			t.Errorf("sampleMode(%v, %v) = %q, want %q", tt.gen, tt.srv, got, tt.want)
		}
	}
}

func TestRunMode(t *testing.T) {
	many := func(n int, m string) []string { return slices.Repeat([]string{m}, n) }
	tests := []struct {
		name    string
		samples []string
		want    string
		one     float64
	}{
		{"all on one CPU", many(10, modeOne), modeOne, 1},
		{"four in five on two, idle samples left out", slices.Concat(many(8, modeTwo), many(2, modeOne), many(5, "")), modeTwo, 0.2},
		{"below four in five", slices.Concat(many(7, modeOne), many(3, modeTwo)), modeMixed, 0.7},
		{"mixed samples count against both", slices.Concat(many(7, modeOne), many(3, modeMixed)), modeMixed, 0.7},
		{"no sample", nil, modeMixed, 0},
		{"idle samples only", many(4, ""), modeMixed, 0},
	}
	for _, tt := range tests {
		mode, one := runMode(tt.samples)
		if mode != tt.want || one != tt.one {
			t.Errorf("%s: runMode = %q, %.2f; want %q, %.2f", tt.name, mode, one, tt.want, tt.one)
		}
	}
}

func TestBusyCPUs(t *testing.T) {
	before := map[string]threadRun{"1": {ns: 0, cpu: 0}, "2": {ns: 0, cpu: 1}, "3": {ns: 0, cpu: 1}}
	after := map[string]threadRun{
		"1": {ns: 3_000_000, cpu: 0}, // 30% of 10 ms: busy
		"2": {ns: 100_000, cpu: 1},   // 1%: the runtime's monitor, say
		"3": {ns: 0, cpu: 1},         // did not run
		"4": {ns: 2_000_000, cpu: 2}, // started meanwhile, and ran 20%
	}
	if got := busyCPUs(before, after, 10*time.Millisecond); !slices.Equal(got, cpuSet{0, 2}) {
		t.Errorf("busyCPUs = %v, want [0 2]", got)
	}
}

func TestLastCPU(t *testing.T) {
	// A stat line of 52 fields, the command name holding a space and a
	// parenthesis; processor (field 39) is 1.
	f := strings.Fields(strings.Repeat("0 ", 52))
	f[0], f[1], f[2] = "4242", "(hub (x)", "y) S"
	f[38] = "1"
	if cpu, err := lastCPU([]byte(strings.Join(f, " "))); err != nil || cpu != 1 {
		t.Errorf("lastCPU = %d, %v; want 1", cpu, err)
	}
	if _, err := lastCPU([]byte("4242 (hub) S 1 2")); err == nil {
		t.Error("lastCPU of a short line: no error")
	}
}

// TestReadThreads reads this process's own threads: each must say a CPU
// of the machine, the thread spinning here must show its time growing,
// and skipping it must leave it out.
func TestReadThreads(t *testing.T) {
	runtime.LockOSThread() // so that /proc/thread-self stays this goroutine's thread
	defer runtime.UnlockOSThread()
	link, err := os.Readlink("/proc/thread-self")
	if err != nil {
		t.Fatal(err)
	}
	self := filepath.Base(link)
	before := readThreads(os.Getpid(), "")
	if _, ok := before[self]; !ok {
		t.Fatalf("thread %s not read among %d", self, len(before))
	}
	for tid, r := range before {
		if r.cpu < 0 || r.cpu >= 4096 {
			t.Errorf("thread %s: CPU %d", tid, r.cpu)
		}
	}
	// Spin until this thread has run 5 ms more, however busy the machine.
	deadline := time.Now().Add(time.Minute)
	for readThreads(os.Getpid(), "")[self].ns-before[self].ns < int64(5*time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("this thread's time did not grow by 5 ms within a minute of spinning")
		}
	}
	if _, ok := readThreads(os.Getpid(), self)[self]; ok {
		t.Errorf("thread %s read although skipped", self)
	}
}

// TestSummarize groups runs by placement and observed mode, and judges
// hub against floor within a group only.
func TestSummarize(t *testing.T) {
	run := func(placement, mode, server string, rep int, rate, p50, cpu float64) seqRep {
		return seqRep{Placement: placement, Mode: mode, Server: server, Rep: rep, Rate: rate, P50: p50, CPU: cpu}
	}
	runs := []seqRep{
		run("one", modeOne, "hub", 0, 45000, 20, 15),
		run("one", modeOne, "floor", 0, 50000, 18, 12),
		run("one", modeOne, "floor", 1, 50000, 18, 12),
		run("one", modeOne, "hub", 1, 40000, 22, 16),
		// Free runs: rep 0 of the hub and of the floor landed in
		// different modes, so that pair gives no ratio.
		run("free", modeTwo, "hub", 0, 15000, 60, 40),
		run("free", modeOne, "floor", 0, 48000, 19, 12),
		run("free", modeTwo, "floor", 1, 20000, 48, 32),
		run("free", modeTwo, "hub", 1, 18000, 52, 36),
		// A run so starved that no tick of the server's CPU time was
		// counted: no CPU ratio, so no verdict, and no NaN.
		run("two", modeMixed, "hub", 0, 10, 3000, 75),
		run("two", modeMixed, "floor", 0, 1, 1900000, 0),
	}
	modes := summarize(runs)
	labels := []string{}
	for i := range modes {
		labels = append(labels, modes[i].label())
	}
	want := []string{"one CPU, pinned to one", "free: two CPUs", "free: one CPU", "mixed, pinned to two"}
	if !slices.Equal(labels, want) {
		t.Fatalf("modes %q, want %q", labels, want)
	}
	one, two, freeOne := modes[0], modes[1], modes[2]
	if one.HubRuns != 2 || one.FloorRuns != 2 || one.Hub != 42500 || one.Floor != 50000 {
		t.Errorf("one CPU: %+v", one)
	}
	if one.RatioLow != 0.8 || one.RatioHigh != 0.9 {
		t.Errorf("one CPU: pairs %.2f-%.2f, want 0.80-0.90", one.RatioLow, one.RatioHigh)
	}
	// Throughput 0.85 < 0.9, p50 21/18 within 1.5x, CPU 15.5/12 > 1.25x.
	if v := one.verdict(); v != "missed throughput, CPU" {
		t.Errorf("one CPU: verdict %q", v)
	}
	if two.HubRuns != 2 || two.FloorRuns != 1 || two.RatioLow != 0.9 || two.RatioHigh != 0.9 {
		t.Errorf("free, two CPUs: only rep 1 pairs: %+v", two)
	}
	if two.P50Ratio != 56.0/48 || two.CPURatio != 38.0/32 {
		t.Errorf("free, two CPUs: p50 ratio %.3f, CPU ratio %.3f", two.P50Ratio, two.CPURatio)
	}
	if freeOne.HubRuns != 0 || freeOne.verdict() != "" || freeOne.Ratio != 0 {
		t.Errorf("free, one CPU, no hub run: %+v, verdict %q", freeOne, freeOne.verdict())
	}
	starved := modes[3]
	if starved.CPURatio != 0 || starved.Ratio != 10 || starved.verdict() != "" || slices.Contains(starved.cells(), "NaN") {
		t.Errorf("starved runs: %+v, verdict %q, cells %q", starved, starved.verdict(), starved.cells())
	}
}

// TestSeqRunsRoundTrip writes runs as seqmode -json does and reads them
// back as report -seqmode does; the section then shows each mode's row
// and the machine's load.
func TestSeqRunsRoundTrip(t *testing.T) {
	m := seqMeta{Date: "2026-11-28 11:00 UTC", CPUs: 2, Reps: 1, Duration: "1s", LoadFrom: 3.5, LoadTo: 4.25, Command: "bench seqmode"}
	runs := []seqRep{
		{Placement: "two", Mode: modeTwo, Server: "hub", Rate: 20000, P50: 40, CPU: 30, Others: 0.5},
		{Placement: "two", Mode: modeTwo, Server: "floor", Rate: 21000, P50: 38, CPU: 28, Others: 0.5},
	}
	path := filepath.Join(t.TempDir(), "seq.jsonl")
	if err := writeOut(path, func(w io.Writer) error { return writeJSONLines(w, "seqMeta", m, runs) }); err != nil {
		t.Fatal(err)
	}
	m2, runs2, err := readSeqRuns(path)
	if err != nil {
		t.Fatal(err)
	}
	if m2 != m || !slices.Equal(runs2, runs) {
		t.Fatalf("read back %+v %+v, want %+v %+v", m2, runs2, m, runs)
	}
	var b strings.Builder
	writeSeqSection(&b, m2, summarize(runs2))
	for _, want := range []string{"load average 3.50 at the start, 4.25 at the end: busy",
		"| two CPUs, pinned to two | 1+1 | 20,000 | 21,000 | 0.95 | 0.95-0.95 | 40 µs | 38 µs | 1.05 |", "| 50% | 0% | met |"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("section lacks %q:\n%s", want, b.String())
		}
	}
}

// TestSeqModeCmd runs seqmode against a hub and a floor served by this
// process, free (pinned to every CPU): each server runs once a rep, the
// hub first in even reps and the floor first in odd ones, and the runs
// and the page's section come out.
func TestSeqModeCmd(t *testing.T) {
	srv := server.New(&server.Options{Router: demo.Mux(), Hub: hub.New(&hub.Options{Policy: hub.AllowAll})})
	hubTS := httptest.NewServer(srv)
	defer hubTS.Close()
	defer srv.Shutdown(t.Context())
	floorTS := httptest.NewServer(newFloor(floorWork{}))
	defer floorTS.Close()
	dir := t.TempDir()
	pid := strconv.Itoa(os.Getpid())
	args := []string{"-placements", "free", "-reps", "2", "-duration", "300ms", "-maxprocs", "follow",
		"-json", filepath.Join(dir, "runs.jsonl"), "-md", filepath.Join(dir, "seq.md"), "-pids", pid + "," + pid,
		"ws" + strings.TrimPrefix(hubTS.URL, "http") + "/rpc", "ws" + strings.TrimPrefix(floorTS.URL, "http") + "/"}
	if err := seqModeCmd(t.Context(), args); err != nil {
		t.Fatal(err)
	}
	m, runs, err := readSeqRuns(filepath.Join(dir, "runs.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, r := range runs {
		order = append(order, fmt.Sprintf("%s%d", r.Server, r.Rep))
		// A run's figures depend on the machine; its tags must be there.
		if r.Placement != "free" || r.Mode == "" {
			t.Errorf("run %+v", r)
		}
	}
	if want := []string{"hub0", "floor0", "floor1", "hub1"}; !slices.Equal(order, want) {
		t.Errorf("runs in the order %q, want %q", order, want)
	}
	if m.Reps != 2 || m.MaxProcs != "follow" {
		t.Errorf("meta %+v", m)
	}
	md, err := os.ReadFile(filepath.Join(dir, "seq.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "| free: ") {
		t.Errorf("no free row in the section:\n%s", md)
	}
}

func TestParseCPUs(t *testing.T) {
	for list, want := range map[string][]int{"0": {0}, "1": {1}, "0-1": {0, 1}, "0,2-3": {0, 2, 3}} {
		var set unix.CPUSet
		if err := parseCPUs(list, &set); err != nil {
			t.Fatalf("%q: %v", list, err)
		}
		var got []int
		for c := range 8 {
			if set.IsSet(c) {
				got = append(got, c)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%q: CPUs %v, want %v", list, got, want)
		}
	}
	for _, bad := range []string{"", "a", "2-1", "-1", "0,"} {
		var set unix.CPUSet
		if parseCPUs(bad, &set) == nil {
			t.Errorf("%q taken", bad)
		}
	}
}
