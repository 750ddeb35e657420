package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// procUsage is what the kernel counted for one process: the CPU time of all
// its threads, the context switches of its threads, and its read and write
// system calls. Linux counts no other system calls per process without
// tracing it, and Go's network poller makes few beyond those (epoll_wait,
// and futex wake-ups, which the context switches show).
type procUsage struct {
	cpu         time.Duration
	voluntary   int64 // context switches: a thread waited (for I/O, a lock, a futex)
	involuntary int64 // context switches: a thread was preempted
	syscalls    int64 // read and write system calls (syscr + syscw)
}

// sub returns u - v.
func (u procUsage) sub(v procUsage) procUsage {
	return procUsage{u.cpu - v.cpu, u.voluntary - v.voluntary, u.involuntary - v.involuntary, u.syscalls - v.syscalls}
}

// clockTick is the unit of the CPU times in /proc/PID/stat: USER_HZ, 100
// on every Linux architecture Go runs on.
const clockTick = 10 * time.Millisecond

// readUsage reads pid's procUsage from /proc.
func readUsage(pid int) (procUsage, error) {
	dir := filepath.Join("/proc", strconv.Itoa(pid))
	var u procUsage
	b, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return u, err
	}
	if u.cpu, err = parseStat(b); err != nil {
		return u, fmt.Errorf("%s/stat: %w", dir, err)
	}
	b, err = os.ReadFile(filepath.Join(dir, "io"))
	if err != nil {
		return u, err
	}
	if u.syscalls, err = parseIO(b); err != nil {
		return u, fmt.Errorf("%s/io: %w", dir, err)
	}
	// /proc/PID/status counts the switches of the main thread alone: the
	// process's are the sum over its threads.
	tasks, err := filepath.Glob(filepath.Join(dir, "task", "*", "status"))
	if err != nil {
		return u, err
	}
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if errors.Is(err, os.ErrNotExist) { // the thread ended meanwhile
			continue
		}
		if err != nil {
			return u, err
		}
		v, n := parseStatus(b)
		u.voluntary += v
		u.involuntary += n
	}
	return u, nil
}

// parseStat returns the user and system CPU time in a /proc/PID/stat line.
func parseStat(b []byte) (time.Duration, error) {
	// After ")": state (field 3), ..., utime (14), stime (15).
	f, err := statFields(b, 13)
	if err != nil {
		return 0, err
	}
	utime, err := strconv.ParseInt(string(f[11]), 10, 64)
	if err != nil {
		return 0, err
	}
	stime, err := strconv.ParseInt(string(f[12]), 10, 64)
	if err != nil {
		return 0, err
	}
	return time.Duration(utime+stime) * clockTick, nil
}

// statFields returns the fields of a /proc/PID/stat line after the
// command name, the first being field 3 (state), and fails if there are
// fewer than n. The command name, in parentheses, may hold spaces and
// parentheses: the fields are counted from the last ")".
func statFields(b []byte, n int) ([][]byte, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, errors.New("no command name")
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < n {
		return nil, fmt.Errorf("%d fields after the command name, want at least %d", len(f), n)
	}
	return f, nil
}

// parseIO returns syscr + syscw from /proc/PID/io.
func parseIO(b []byte) (int64, error) {
	var n int64
	found := 0
	for _, line := range bytes.Split(b, []byte("\n")) {
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok || (string(k) != "syscr" && string(k) != "syscw") {
			continue
		}
		c, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
		if err != nil {
			return 0, err
		}
		n += c
		found++
	}
	if found != 2 {
		return 0, errors.New("no syscr and syscw")
	}
	return n, nil
}

// parseStatus returns the voluntary and involuntary context switches in
// a /proc/PID/status (or /proc/PID/task/TID/status) file.
func parseStatus(b []byte) (voluntary, involuntary int64) {
	for _, line := range bytes.Split(b, []byte("\n")) {
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
		switch string(k) {
		case "voluntary_ctxt_switches":
			voluntary = n
		case "nonvoluntary_ctxt_switches":
			involuntary = n
		}
	}
	return voluntary, involuntary
}

// residentOfPID returns pid's resident set size in bytes, from
// /proc/PID/statm.
func residentOfPID(pid int) (int64, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "statm"))
	if err != nil {
		return 0, err
	}
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0, errors.New("statm: too few fields")
	}
	pages, err := strconv.ParseInt(string(f[1]), 10, 64)
	return pages * int64(os.Getpagesize()), err
}
