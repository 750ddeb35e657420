package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/internal/hubtest"
)

// Several URLs, in the URL argument or with -url: rpc uses the first that
// answers. Over HTTP POST, one URL only.
func TestSeveralURLs(t *testing.T) {
	h := hubtest.Start(t, nil)
	dead := hubtest.DeadURL(t)
	rpc(t, "", "call", dead+","+h.WS(), "rpc.ping").check(t, 0, "{}\n")
	rpc(t, "", "call", "-url", h.WS(), dead, "rpc.ping").check(t, 0, "{}\n")
	rpc(t, "", "publish", "-url", dead+","+h.WS(), dead, "t.x", "1").check(t, 0, published(h, 0, 1))
	if r := rpc(t, "", "call", "-url", h.HTTP(), h.HTTP(), "rpc.ping"); r.code != exitUsage || !strings.Contains(r.stderr, "several URLs need ws://") {
		t.Fatalf("two http:// URLs: exit %d, %q", r.code, r.stderr)
	}
}

// rpc provide, stopped, ends the commands it runs, and what they started.
func TestProvideStopsItsCommands(t *testing.T) {
	h := hubtest.Start(t, nil)
	pidFile := filepath.Join(t.TempDir(), "pid")
	cmd, _, lines := start(t, "provide", h.WS(), "slow.x=sleep 60 & echo $! > "+pidFile+"; wait")
	waitLine(t, lines, "providing slow.x")
	done := make(chan result, 1)
	go func() { done <- rpc(t, "", "call", "-timeout", "30s", h.WS(), "slow.x") }()

	var pid int
	deadline := time.Now().Add(wait)
	for pid == 0 {
		if b, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(b), "\n") {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		if time.Now().After(deadline) {
			t.Fatal("the command did not start")
		}
		time.Sleep(10 * time.Millisecond) // polling a file the command writes
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("provide after SIGTERM: %v", err)
	}
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d, started by the command, outlived rpc provide", pid)
		}
		time.Sleep(10 * time.Millisecond) // polling the process table
	}
	if r := <-done; r.code == 0 {
		t.Fatalf("the call succeeded: %+v", r)
	}
}

// alive reports whether the process runs (a zombie does not).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return syscall.Kill(pid, 0) == nil // no /proc: ask the kernel
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}
