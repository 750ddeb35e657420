// Package hubproc runs the hub command as a real process, for tests that
// need what only a process has: its flags, its signals, its exit, a
// restart on the same address.
//
// The binary is built once per test binary (with -race when the tests run
// with it, so the hub is checked too) into a temporary directory; call
// [Cleanup] from TestMain to remove it, or let [Main] do that and check
// for leaked goroutines:
//
//	func TestMain(m *testing.M) { hubproc.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		h := hubproc.Start(t, &hubproc.Options{Args: []string{"-demo"}})
//		... h.URL(), h.WebSocketURL() ...
//		h.Stop()    // SIGTERM, as an operator would
//		h.Restart() // same port
//	}
package hubproc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/internal/port"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

// Options configures a Hub. A nil *Options is valid.
type Options struct {
	// Args are the hub's flags, beside -addr, which Start chooses.
	Args []string
	// Env is added to the process's environment.
	Env []string
	// StartTimeout bounds the wait for /healthz to answer. Default 30s.
	StartTimeout time.Duration
	// StopTimeout bounds the wait for the process to exit after SIGTERM;
	// then it is killed and Stop fails. Default 60s: a hub drains for up
	// to its -shutdown-timeout (10 s), and closing a thousand connections
	// after it took 10 s more on a loaded machine.
	StopTimeout time.Duration
	// AddressSpace, if positive, limits the process's virtual memory to
	// this many bytes (ulimit -v), as an operator's limit would: beyond
	// it, the hub dies of out-of-memory. Such a hub is built without the
	// race detector even when the test has it: the detector's shadow
	// memory would not fit in the limit.
	AddressSpace int64
	// Admin serves the metrics and Go's profiles on a second address
	// (-metrics-addr, -pprof), chosen by Start and kept across restarts.
	// [Hub.Metrics] reads them there; [Hub.HeapAfterGC] needs it.
	Admin bool
}

// Hub is a hub process. Its methods must be called from the test's
// goroutine, or at least not concurrently.
type Hub struct {
	t     testing.TB
	opts  Options
	addr  string
	admin string          // -metrics-addr, when opts.Admin
	log   *testkit.Buffer // the process's output, across restarts

	cmd  *exec.Cmd     // nil when not running
	done chan struct{} // closed when cmd has exited
	err  error         // cmd.Wait's error, once done is closed
}

// Start builds the hub if it is not built yet, starts it on a free port of
// 127.0.0.1 with opts.Args, and waits until its /healthz answers. A
// failure fails the test. The process is stopped when the test ends, and
// its output is logged if the test failed.
func Start(t testing.TB, opts *Options) *Hub {
	t.Helper()
	h := &Hub{t: t, log: &testkit.Buffer{}}
	if opts != nil {
		h.opts = *opts
	}
	if h.opts.StartTimeout <= 0 {
		h.opts.StartTimeout = 30 * time.Second
	}
	if h.opts.StopTimeout <= 0 {
		h.opts.StopTimeout = time.Minute
	}
	t.Cleanup(h.cleanup)
	// The port is free when chosen; another process could take it before
	// the hub binds it, so try a few.
	var err error
	for range 3 {
		if h.addr, err = FreeAddr(); err != nil {
			break
		}
		if h.opts.Admin {
			if h.admin, err = FreeAddr(); err != nil {
				break
			}
		}
		if err = h.start(); !errors.Is(err, errAddrInUse) {
			break
		}
	}
	if err != nil {
		t.Fatalf("hubproc: %v\n%s", err, h.Log())
	}
	return h
}

// Addr returns the host:port the hub listens on.
func (h *Hub) Addr() string { return h.addr }

// URL returns the hub's HTTP base URL, such as http://127.0.0.1:41234.
func (h *Hub) URL() string { return "http://" + h.addr }

// WebSocketURL returns the hub's WebSocket endpoint, ws://host:port/rpc.
func (h *Hub) WebSocketURL() string { return "ws://" + h.addr + "/rpc" }

// Log returns everything the process (every run of it) wrote.
func (h *Hub) Log() string { return h.log.String() }

// Pid returns the process id of the running process, 0 when it is not
// running: for limits (prlimit) and what the kernel counts (/proc).
func (h *Hub) Pid() int {
	if !h.Running() {
		return 0
	}
	return h.cmd.Process.Pid
}

// Running reports whether the process is running.
func (h *Hub) Running() bool {
	if h.cmd == nil {
		return false
	}
	select {
	case <-h.done:
		return false
	default:
		return true
	}
}

// Stop sends SIGTERM and waits for the process to exit, as an operator's
// Ctrl-C would. It returns the process's exit error (nil for status 0). If
// the process does not exit within StopTimeout it is killed, and Stop
// returns an error saying so.
func (h *Hub) Stop() error {
	if h.cmd == nil {
		return nil
	}
	_ = h.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(h.opts.StopTimeout)
	defer t.Stop()
	select {
	case <-h.done:
		return h.reap()
	case <-t.C:
		_ = h.cmd.Process.Kill()
		<-h.done
		_ = h.reap()
		return fmt.Errorf("hub did not exit within %v of SIGTERM; killed", h.opts.StopTimeout)
	}
}

// Kill ends the process at once with SIGKILL, as a crash would: nothing
// is shut down gracefully.
func (h *Hub) Kill() {
	if h.cmd == nil {
		return
	}
	_ = h.cmd.Process.Kill()
	<-h.done
	_ = h.reap()
}

// Restart starts the hub again, stopped or not (a running one is stopped
// first), on the same address and with the same flags, and waits until it
// answers. It is a new process: it remembers nothing of the last.
func (h *Hub) Restart() {
	h.t.Helper()
	if err := h.Stop(); err != nil {
		h.t.Errorf("hubproc: stopping for a restart: %v", err)
	}
	if err := h.start(); err != nil {
		h.t.Fatalf("hubproc: restart: %v\n%s", err, h.Log())
	}
}

var errAddrInUse = errors.New("address already in use")

// start runs the process and waits until it is healthy or has exited.
func (h *Hub) start() error {
	bin, err := command("hub", raceEnabled && h.opts.AddressSpace <= 0)
	if err != nil {
		return err
	}
	mark := h.log.Len()
	args := []string{"-addr", h.addr}
	if h.admin != "" {
		args = append(args, "-metrics-addr", h.admin, "-pprof")
	}
	cmd := exec.Command(bin, append(args, h.opts.Args...)...)
	if h.opts.AddressSpace > 0 {
		limit := fmt.Sprintf(`ulimit -v %d && exec "$0" "$@"`, h.opts.AddressSpace>>10)
		cmd = exec.Command("/bin/sh", append([]string{"-c", limit, bin}, cmd.Args[1:]...)...)
	}
	cmd.Env = append(os.Environ(), h.opts.Env...)
	cmd.Stdout = h.log
	cmd.Stderr = h.log
	if err := cmd.Start(); err != nil {
		return err
	}
	h.cmd = cmd
	h.done = make(chan struct{})
	go func() {
		h.err = cmd.Wait()
		close(h.done)
	}()
	if err := h.waitHealthy(); err != nil {
		if !h.Running() && strings.Contains(h.log.String()[mark:], "address already in use") {
			_ = h.reap()
			return errAddrInUse
		}
		h.Kill()
		return err
	}
	return nil
}

// waitHealthy asks /healthz until it answers 200, the process exits, or
// StartTimeout passes.
func (h *Hub) waitHealthy() error {
	ctx, cancel := context.WithTimeout(context.Background(), h.opts.StartTimeout)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, h.URL()+"/healthz", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-h.done:
			return fmt.Errorf("hub exited while starting: %v", h.err)
		case <-ctx.Done():
			return fmt.Errorf("hub not healthy within %v", h.opts.StartTimeout)
		case <-tick.C:
		}
	}
}

// reap forgets the exited process and returns its exit error.
func (h *Hub) reap() error {
	err := h.err
	h.cmd = nil
	return err
}

func (h *Hub) cleanup() {
	if err := h.Stop(); err != nil {
		h.t.Errorf("hubproc: %v", err)
	}
	if strings.Contains(h.log.String(), "WARNING: DATA RACE") {
		h.t.Errorf("hubproc: the race detector found a data race in the hub")
	}
	if h.t.Failed() {
		h.t.Logf("hub output:\n%s", h.Log())
	}
}

// FreeAddr returns a free 127.0.0.1:port for a listener that is stopped
// and started again on the same port (a hub restarted, a NATS server
// brought back): one no outgoing connection takes meanwhile (see
// port.Restartable).
func FreeAddr() (string, error) { return port.Restartable() }

var built struct {
	mu   sync.Mutex
	dir  string            // the temporary directory of every binary
	bins map[string]*build // by command name, "-norace" added to one built without the race detector
}

type build struct {
	once sync.Once
	path string
	err  error
}

// Binary returns the path of the hub binary, building it on first use:
// from the module this one replaces with a local directory, with -race
// when the test binary has the race detector.
func Binary() (string, error) { return Command("hub") }

// Command returns the path of the binary of the module's ./cmd/name (such
// as "rpc"), built as [Binary] builds the hub, once per test binary.
func Command(name string) (string, error) { return command(name, raceEnabled) }

// command returns the path of ./cmd/name built with or without the race
// detector, building it on first use.
func command(name string, race bool) (string, error) {
	key := name
	if raceEnabled && !race {
		key += "-norace"
	}
	built.mu.Lock()
	if built.bins == nil {
		built.bins = map[string]*build{}
	}
	b := built.bins[key]
	if b == nil {
		b = &build{}
		built.bins[key] = b
	}
	built.mu.Unlock()
	b.once.Do(func() {
		b.path, b.err = buildCommand(name, key, race)
	})
	return b.path, b.err
}

func buildCommand(name, file string, race bool) (string, error) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("building ./cmd/%s needs the go command: %w", name, err)
	}
	root, err := moduleRoot(gobin)
	if err != nil {
		return "", err
	}
	built.mu.Lock()
	if built.dir == "" {
		built.dir, err = os.MkdirTemp("", "hubproc-")
	}
	dir := built.dir
	built.mu.Unlock()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, file)
	args := []string{"build", "-o", bin}
	if race {
		args = append(args, "-race")
	}
	cmd := exec.Command(gobin, append(args, "./cmd/"+name)...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/%s: %v\n%s", name, err, out)
	}
	return bin, nil
}

// moduleRoot finds the directory of the switchboard module: the target of
// the replace directive in the go.mod of the module being tested.
func moduleRoot(gobin string) (string, error) {
	gomod, err := exec.Command(gobin, "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(gomod))
	out, err := exec.Command(gobin, "mod", "edit", "-json", mod).Output()
	if err != nil {
		return "", fmt.Errorf("go mod edit -json %s: %w", mod, err)
	}
	var m struct {
		Replace []struct{ Old, New struct{ Path string } }
	}
	if err := json.Unmarshal(out, &m); err != nil {
		return "", err
	}
	for _, r := range m.Replace {
		if r.Old.Path == modulePath {
			return filepath.Join(filepath.Dir(mod), r.New.Path), nil
		}
	}
	return "", fmt.Errorf("%s does not replace %s with a directory", mod, modulePath)
}

const modulePath = "github.com/switchboard-rpc/switchboard"

// Cleanup removes the built binary. Call it from TestMain after m.Run.
func Cleanup() {
	built.mu.Lock()
	defer built.mu.Unlock()
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
}
