package deploy

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

// alive reports whether the process pid runs (a zombie does not).
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// pid (comm) S ...: the state follows the last ')'.
	s := string(stat)
	return !strings.HasPrefix(strings.TrimSpace(s[strings.LastIndexByte(s, ')')+1:]), "Z")
}

// A kill of make run-cluster (SIGTERM, as kill sends) stops its three
// hubs, under the system's sh (dash on Debian). Stand-ins play the hubs:
// make runs in a directory whose bin/hub is a script that notes its pid
// and sleeps.
func TestRunClusterStops(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pids")
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	fake := "#!/bin/sh\necho $$ >> \"$HUB_PIDS\"\nexec sleep 300\n"
	if err := os.WriteFile(filepath.Join(dir, "bin", "hub"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	makefile, err := filepath.Abs(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("make", "-s", "-f", makefile, "run-cluster", "GO=true") // GO=true: no build
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HUB_PIDS="+pidFile)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var pids []int
	t.Cleanup(func() {
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		_ = cmd.Process.Kill()
		<-exited
	})
	testkit.WaitFor(t, "three hubs to start", func() bool {
		b, _ := os.ReadFile(pidFile)
		pids = pids[:0]
		for f := range strings.FieldsSeq(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
		return len(pids) == 3
	})
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err = testkit.Recv(t, exited, "make to exit")
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the hubs to stop", func() bool {
		for _, pid := range pids {
			if alive(pid) {
				return false
			}
		}
		return true
	})
	exited <- nil // for the cleanup
}
