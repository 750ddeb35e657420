package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseProc(t *testing.T) {
	// A command name with a space and a parenthesis: fields count from the last ")".
	stat := []byte("4242 (hub (x) y) S 1 4242 4242 0 -1 4194560 1200 0 0 0 250 130 0 0 20 0 9 0 100 2000000 3000 18446744073709551615\n")
	cpu, err := parseStat(stat)
	if err != nil || cpu != 380*clockTick {
		t.Errorf("parseStat = %v, %v; want %v", cpu, err, 380*clockTick)
	}
	if _, err := parseStat([]byte("4242 (hub) S 1")); err == nil {
		t.Error("parseStat of a short line: no error")
	}
	io := []byte("rchar: 6976\nwchar: 10\nsyscr: 10\nsyscw: 32\nread_bytes: 0\n")
	if n, err := parseIO(io); err != nil || n != 42 {
		t.Errorf("parseIO = %d, %v; want 42", n, err)
	}
	if _, err := parseIO([]byte("rchar: 1\n")); err == nil {
		t.Error("parseIO without syscr: no error")
	}
	status := []byte("Name:\thub\nThreads:\t9\nvoluntary_ctxt_switches:\t17\nnonvoluntary_ctxt_switches:\t4\n")
	if v, n := parseStatus(status); v != 17 || n != 4 {
		t.Errorf("parseStatus = %d, %d; want 17, 4", v, n)
	}
}

// TestReadUsage reads this process's counters: they must only grow, and
// a read-and-write loop must show in the system calls.
func TestReadUsage(t *testing.T) {
	before, err := readUsage(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		if _, err := os.ReadFile("/proc/self/stat"); err != nil {
			t.Fatal(err)
		}
	}
	for start := time.Now(); time.Since(start) < 30*time.Millisecond; { // at least one clock tick of CPU
	}
	after, err := readUsage(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	d := after.sub(before)
	if d.syscalls < 100 || d.cpu <= 0 || d.voluntary < 0 || d.involuntary < 0 {
		t.Errorf("usage over the loop: %+v", d)
	}
	if rss, err := residentOfPID(os.Getpid()); err != nil || rss <= 0 {
		t.Errorf("residentOfPID = %d, %v", rss, err)
	}
}

// TestCPUOf checks the per-operation figures, the ratio and its spread,
// the floor's best run and the verdict, and that the report shows them.
func TestCPUOf(t *testing.T) {
	fig := func(ops int, cpu time.Duration, switches, syscalls int64) figure {
		return figure{ops: ops, metered: true, used: procUsage{cpu: cpu, voluntary: switches, syscalls: syscalls}}
	}
	hub := []figure{fig(1000, 50*time.Millisecond, 2000, 6000), fig(1000, 60*time.Millisecond, 2000, 6000), fig(1000, 55*time.Millisecond, 2000, 6000)}
	floor := []figure{fig(1000, 40*time.Millisecond, 1000, 4000), fig(1000, 30*time.Millisecond, 1000, 4000), fig(1000, 50*time.Millisecond, 1000, 4000)}
	c := cpuOf("seq", hub, floor)
	// Per-run ratios: 1.25, 2, 1.1.
	if c.HubCPU != 55 || c.FloorCPU != 40 || c.FloorCPUBest != 30 || c.CPURatio != 1.25 ||
		c.CPURatioLow != 1.1 || c.CPURatioHigh != 2 || c.HubSwitches != 2 || c.HubSyscalls != 6 || c.FloorSyscall != 4 {
		t.Errorf("cpuOf = %+v", c)
	}
	if c.cpuVerdict() != "met" {
		t.Errorf("ratio 1.25 against 1.25: %q", c.cpuVerdict())
	}
	if c.AllSyscalls {
		t.Error("system calls said counted by perf")
	}
	missed := cpuResult{CPURatio: 1.2523, CPUTarget: 1.25}
	if missed.cpuVerdict() != "missed" || missed.cpuRatioText() != "1.252" {
		t.Errorf("ratio 1.2523 against 1.25: %q, shown %q", missed.cpuVerdict(), missed.cpuRatioText())
	}
	// With perf's counts in every run, those are shown; one run without
	// them, and the reads and writes are, for every run.
	for i := range hub {
		hub[i].perf, hub[i].perfSyscalls = true, 9000
		floor[i].perf, floor[i].perfSyscalls = true, 5000
	}
	if all := cpuOf("seq", hub, floor); !all.AllSyscalls || all.HubSyscalls != 9 || all.FloorSyscall != 5 {
		t.Errorf("with perf: %+v", all)
	}
	floor[1].perf = false
	if some := cpuOf("seq", hub, floor); some.AllSyscalls || some.HubSyscalls != 6 {
		t.Errorf("with perf in some runs: %+v", some)
	}
	if unmetered := cpuOf("seq", []figure{{ops: 10}}, []figure{{ops: 10}}); unmetered != (cpuResult{}) {
		t.Errorf("cpuOf of unmetered runs = %+v", unmetered)
	}
	results := []result{{Scenario: "seq", cpuResult: c}, {Scenario: "idle"}}
	var table bytes.Buffer
	printCPUTable(&table, results)
	var page bytes.Buffer
	writeCPUSection(&page, results)
	for _, want := range []string{"55.00 µs", "30.00 µs", "1.25", "1.10-2.00", "met"} {
		if !strings.Contains(table.String(), want) || !strings.Contains(page.String(), want) {
			t.Errorf("%q missing from\n%s\nor\n%s", want, table.String(), page.String())
		}
	}
	if strings.Contains(table.String(), "idle") {
		t.Errorf("a row without CPU figures:\n%s", table.String())
	}
}

func TestParsePerf(t *testing.T) {
	out := []byte("76,,raw_syscalls:sys_enter,1848859,100.00,41.106,K/sec\n")
	if n, err := parsePerf(out); err != nil || n != 76 {
		t.Errorf("parsePerf = %d, %v; want 76", n, err)
	}
	if n, err := parsePerf([]byte("<not counted>,,raw_syscalls:sys_enter,0,0.00,,\n")); err != nil || n != 0 {
		t.Errorf("parsePerf of a process that did not run = %d, %v; want 0", n, err)
	}
	for _, bad := range []string{"<not supported>,,raw_syscalls:sys_enter,0,100.00,,\n", "Error: no permission\n"} {
		if _, err := parsePerf([]byte(bad)); err == nil {
			t.Errorf("parsePerf(%q): no error", bad)
		}
	}
}

// The CPU table leaves out a scenario whose unit is CPU time already: its
// per-process figures belong to a hub idle meanwhile.
func TestCPURowsSkipCPUScenarios(t *testing.T) {
	results := []result{
		{Scenario: "seq", Unit: "calls/s", cpuResult: cpuResult{HubCPU: 39}},
		{Scenario: "cluster", Unit: "ns CPU/delivery", cpuResult: cpuResult{HubCPU: 0.05}},
	}
	rows := cpuRows(results)
	if len(rows) != 1 || rows[0][0] != "seq" {
		t.Fatalf("rows %v, want seq's alone", rows)
	}
}
