package main

// Where the load generator and a server run, and what else the machine
// does meanwhile. A sequential call's cost depends less on either program
// than on this: on one CPU, the two processes hand the CPU to each other
// and a call costs about 20 µs; on two, every call wakes a CPU that went
// idle waiting for it, and each process's Go runtime spins and polls
// before it sleeps, which doubles the CPU time per call (see seqmode.go
// and docs/benchmarks.md). Left alone, the kernel's scheduler picks one
// or the other and may keep it for seconds, so a run lands in one mode.
// Here the placement is set with sched_setaffinity, and observed by
// sampling which CPU each thread last ran on (/proc/PID/task/TID/stat)
// among the threads that ran since the last sample
// (/proc/PID/task/TID/schedstat).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// pin sets the CPUs (a list such as "0", "1" or "0-1") on which every
// thread of pid may run; new threads inherit it from the thread that
// creates them. It sets each thread's affinity itself rather than run
// taskset -a, which fails when one of the threads exits while it goes
// through them (a Go process's threads come and go). A second pass takes
// the threads created during the first.
func pin(pid int, cpus string) error {
	var set unix.CPUSet
	if err := parseCPUs(cpus, &set); err != nil {
		return err
	}
	for range 2 {
		tids, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if err != nil {
			return err
		}
		for _, e := range tids {
			tid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			if err := unix.SchedSetaffinity(tid, &set); err != nil && !errors.Is(err, unix.ESRCH) {
				return fmt.Errorf("pin thread %d of %d to CPUs %s: %w", tid, pid, cpus, err)
			}
		}
	}
	return nil
}

// parseCPUs adds the CPUs of a list such as "0,2-3" to set.
func parseCPUs(list string, set *unix.CPUSet) error {
	for part := range strings.SplitSeq(list, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		if !isRange {
			hi = lo
		}
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if err1 != nil || err2 != nil || a < 0 || b < a {
			return fmt.Errorf("bad CPU list %q", list)
		}
		for c := a; c <= b; c++ {
			set.Set(c)
		}
	}
	return nil
}

// allCPUs is the list of every CPU of the machine that is online
// (runtime.NumCPU counts those this process may use, which pin narrows).
func allCPUs() string {
	if b, err := os.ReadFile("/sys/devices/system/cpu/online"); err == nil {
		return strings.TrimSpace(string(b))
	}
	return fmt.Sprintf("0-%d", runtime.NumCPU()-1)
}

// Placement modes, as observed or asked for.
const (
	modeOne   = "one CPU"  // load generator and server took turns on one CPU
	modeTwo   = "two CPUs" // each ran on a CPU of its own
	modeMixed = "mixed"    // neither held for most of the run
)

// cpuSet is the CPUs some threads ran on during one sample.
type cpuSet []int

// sampleMode classifies one sample: the CPUs where the load generator's
// busy threads ran, and where the server's did. It returns "" when either
// did not run (nothing to say).
func sampleMode(gen, srv cpuSet) string {
	switch {
	case len(gen) == 0 || len(srv) == 0:
		return ""
	case len(gen) == 1 && slices.Equal(gen, srv):
		return modeOne
	case !slices.ContainsFunc(gen, func(c int) bool { return slices.Contains(srv, c) }):
		return modeTwo
	}
	return modeMixed
}

// modeShare is how much of a run must be spent in one mode for the run to
// be tagged with it.
const modeShare = 0.8

// runMode tags a run with the mode of at least modeShare of its samples,
// else mixed, and returns the share of samples that found both programs on
// one CPU. A run with no sample is mixed.
func runMode(samples []string) (mode string, one float64) {
	n := map[string]int{}
	total := 0
	for _, s := range samples {
		if s != "" {
			n[s]++
			total++
		}
	}
	if total == 0 {
		return modeMixed, 0
	}
	one = float64(n[modeOne]) / float64(total)
	for _, m := range []string{modeOne, modeTwo} {
		if float64(n[m]) >= modeShare*float64(total) {
			return m, one
		}
	}
	return modeMixed, one
}

// busyShare is the least share of a sample's interval a thread must have
// run for to count as one of its process's busy threads: the Go runtime's
// monitor thread and the collector's workers wake up briefly anywhere.
const busyShare = 0.05

// threadRun is what one thread of a process did up to a sample: its
// time on a CPU (ns) and the CPU it last ran on.
type threadRun struct {
	ns  int64
	cpu int
}

// readThreads reads, for each thread of pid but skip, its threadRun.
func readThreads(pid int, skip string) map[string]threadRun {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "task")
	tids, _ := os.ReadDir(dir)
	runs := make(map[string]threadRun, len(tids))
	for _, t := range tids {
		if t.Name() == skip {
			continue
		}
		sched, err1 := os.ReadFile(filepath.Join(dir, t.Name(), "schedstat"))
		stat, err2 := os.ReadFile(filepath.Join(dir, t.Name(), "stat"))
		if err1 != nil || err2 != nil { // the thread ended meanwhile
			continue
		}
		ns, err1 := strconv.ParseInt(string(bytes.Fields(sched)[0]), 10, 64)
		cpu, err2 := lastCPU(stat)
		if err1 == nil && err2 == nil {
			runs[t.Name()] = threadRun{ns, cpu}
		}
	}
	return runs
}

// lastCPU returns the CPU a thread last ran on: field 39 of its stat
// line.
func lastCPU(stat []byte) (int, error) {
	f, err := statFields(stat, 37)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(string(f[36]))
}

// busyCPUs returns the CPUs of the threads that ran for at least
// busyShare of interval between before and after.
func busyCPUs(before, after map[string]threadRun, interval time.Duration) cpuSet {
	var cpus cpuSet
	for tid, a := range after {
		if a.ns-before[tid].ns >= int64(busyShare*float64(interval)) && !slices.Contains(cpus, a.cpu) {
			cpus = append(cpus, a.cpu)
		}
	}
	slices.Sort(cpus)
	return cpus
}

// sampleInterval is how often placement samples are taken.
const sampleInterval = 10 * time.Millisecond

// watchPlacement samples, every sampleInterval until ctx ends, where this
// process and the server pid run, and returns the samples' modes once
// ctx has ended and the sampling stopped. Its own thread is left out.
func watchPlacement(ctx context.Context, server int) func() []string {
	var samples []string
	var wg sync.WaitGroup
	wg.Go(func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		self := ""
		if link, err := os.Readlink("/proc/thread-self"); err == nil {
			self = filepath.Base(link)
		}
		gen, srv := readThreads(os.Getpid(), self), readThreads(server, "")
		t := time.NewTicker(sampleInterval)
		defer t.Stop()
		last := time.Now()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				gen2, srv2 := readThreads(os.Getpid(), self), readThreads(server, "")
				d := now.Sub(last)
				samples = append(samples, sampleMode(busyCPUs(gen, gen2, d), busyCPUs(srv, srv2, d)))
				gen, srv, last = gen2, srv2, now
			}
		}
	})
	return func() []string {
		wg.Wait()
		return samples
	}
}

// machineTime is the CPU time of the whole machine, from /proc/stat's
// first line, in clock ticks: busy (user, nice, system, irq, softirq),
// all (busy, idle and iowait too), and stolen by the hypervisor.
type machineTime struct{ busy, all, steal int64 }

func readMachine() (machineTime, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineTime{}, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return machineTime{}, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var v [8]int64
	for i := range v {
		if v[i], err = strconv.ParseInt(f[i+1], 10, 64); err != nil {
			return machineTime{}, err
		}
	}
	// user nice system idle iowait irq softirq steal
	busy := v[0] + v[1] + v[2] + v[5] + v[6]
	return machineTime{busy: busy, all: busy + v[3] + v[4] + v[7], steal: v[7]}, nil
}

// loadAverage returns the first field of /proc/loadavg: the machine's
// run queue over the last minute.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}
