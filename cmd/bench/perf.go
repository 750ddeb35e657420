package main

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// /proc counts a process's read and write system calls only; where perf
// is installed and may trace the server (root, or a low enough
// kernel.perf_event_paranoid), it counts every system call, from the
// raw_syscalls:sys_enter tracepoint.

// perfCounter is a running "perf stat" on one process.
type perfCounter struct {
	cmd *exec.Cmd
	out bytes.Buffer
}

// startPerf starts counting pid's system calls, and gives perf a moment to
// attach.
func startPerf(pid int) (*perfCounter, error) {
	p := &perfCounter{cmd: exec.Command("perf", "stat", "-x", ",", "-e", "raw_syscalls:sys_enter", "-p", strconv.Itoa(pid))}
	p.cmd.Stderr = &p.out
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	time.Sleep(200 * time.Millisecond)
	return p, nil
}

// stop ends the count and returns it.
func (p *perfCounter) stop() (int64, error) {
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		return 0, err
	}
	_ = p.cmd.Wait() // perf exits non-zero on SIGINT
	return parsePerf(p.out.Bytes())
}

// parsePerf reads the count of perf stat -x, output: "76,,raw_syscalls:sys_enter,...".
func parsePerf(b []byte) (int64, error) {
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Split(line, ",")
		if len(f) >= 3 && f[2] == "raw_syscalls:sys_enter" {
			switch f[0] {
			case "<not counted>": // the process did not run meanwhile
				return 0, nil
			case "<not supported>":
				return 0, errors.New("perf: " + f[0])
			}
			return strconv.ParseInt(f[0], 10, 64)
		}
	}
	return 0, fmt.Errorf("perf: no count in %q", b)
}

// perfWorks reports whether perf can count a process's system calls here.
func perfWorks(pid int) bool {
	if _, err := exec.LookPath("perf"); err != nil {
		return false
	}
	p, err := startPerf(pid)
	if err != nil {
		return false
	}
	_, err = p.stop()
	return err == nil
}
