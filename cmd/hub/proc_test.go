package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// proc is the hub running as a process of its own, as a user runs it:
// this test binary, run again with HUB_TEST_RUN_MAIN so that TestMain
// calls main. Everything it writes to stderr is kept.
type proc struct {
	cmd *exec.Cmd

	mu      sync.Mutex
	stderr  strings.Builder
	changed chan struct{} // closed and replaced when stderr grows
	eof     chan struct{} // closed once stderr is at its end
	stopped bool
}

// startProc runs the hub with -addr 127.0.0.1:0 -log-format json and
// args, and returns once it logs "hub listening". The test's end kills
// it if Stop has not stopped it.
func startProc(t *testing.T, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "HUB_TEST_RUN_MAIN=1",
		"HUB_TEST_ARGS="+strings.Join(append([]string{"-addr", "127.0.0.1:0", "-log-format", "json"}, args...), " "))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, changed: make(chan struct{}), eof: make(chan struct{})}
	go func() {
		defer close(p.eof)
		r := bufio.NewReader(stderr)
		for {
			line, err := r.ReadString('\n')
			p.mu.Lock()
			p.stderr.WriteString(line)
			close(p.changed)
			p.changed = make(chan struct{})
			p.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		p.mu.Lock()
		stopped := p.stopped
		p.mu.Unlock()
		if !stopped {
			_ = cmd.Process.Kill()
			<-p.eof
			_ = cmd.Wait()
		}
	})
	return p
}

// Stop sends SIGTERM and waits for the hub to exit, which must be with
// status 0, and returns everything it wrote to stderr.
func (p *proc) Stop(t *testing.T) string {
	t.Helper()
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.eof:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.eof
		_ = p.cmd.Wait()
		t.Fatal("the hub did not exit after SIGTERM")
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("hub exited with %v, want status 0\n%s", err, p.Log())
	}
	return p.Log()
}

// Log returns what the hub has written to stderr so far.
func (p *proc) Log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// Addr waits for the JSON log line with message msg and an "addr" field,
// such as "hub listening", and returns the address.
func (p *proc) Addr(t *testing.T, msg string) string {
	t.Helper()
	var addr string
	p.waitLog(t, fmt.Sprintf("the hub ended without logging %q", msg), fmt.Sprintf("no %q line", msg), func(text string) bool {
		for line := range strings.Lines(text) {
			var entry struct{ Msg, Addr string }
			if json.Unmarshal([]byte(line), &entry) == nil && entry.Msg == msg && entry.Addr != "" {
				addr = entry.Addr
				return true
			}
		}
		return false
	})
	return addr
}

// WaitLog waits until the hub has written want at least n times, and
// fails the test if it ends or 20 seconds pass first.
func (p *proc) WaitLog(t *testing.T, want string, n int) {
	t.Helper()
	p.waitLog(t, fmt.Sprintf("the hub ended before writing %q %d times", want, n), fmt.Sprintf("no %q (%d times) within 20s", want, n), func(text string) bool {
		return strings.Count(text, want) >= n
	})
}

// waitLog waits until found says yes to what the hub has written, each
// time it writes more; if the hub ends first the test fails with ended,
// and with late once 20 seconds have passed; the log follows either.
func (p *proc) waitLog(t *testing.T, ended, late string, found func(text string) bool) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		p.mu.Lock()
		text, changed := p.stderr.String(), p.changed
		p.mu.Unlock()
		if found(text) {
			return
		}
		select {
		case <-changed:
		case <-p.eof:
			t.Fatalf("%s:\n%s", ended, p.Log())
		case <-deadline:
			t.Fatalf("%s:\n%s", late, p.Log())
		}
	}
}

// Signal sends sig to the hub.
func (p *proc) Signal(t *testing.T, sig os.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}
