package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/switchboard-rpc/switchboard/internal/port"
)

// servers are the hub and floor processes that bench run -start runs.
type servers struct {
	hubURL, floorURL string
	hubMetrics       string // the hub's /metrics URL
	procs            []*proc
}

// proc is a process started by launch.
type proc struct {
	cmd   *exec.Cmd
	ended chan struct{} // closed once it has exited
	err   error         // how it exited, once ended is closed
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// A server just started answers within startWait; a hub that opens a
// JetStream stream at start may take much longer on a loaded machine:
// readyWait bounds the wait on its /readyz.
const (
	startWait = 30 * time.Second
	readyWait = 2 * time.Minute
)

// startServers starts the hub binary with the demo methods and, if
// withFloor, this program's floor, each on a free loopback port, and waits
// until they answer HTTP. With profiles, the hub serves /metrics and Go's
// profiles on a port of their own (-metrics-addr, -pprof).
func startServers(ctx context.Context, hubBinary string, withFloor, profiles bool) (*servers, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	s := &servers{}
	hubAddr, floorAddr, err := hubAndFloorAddrs()
	if err != nil {
		return nil, err
	}
	// No connection limits: every connection comes from 127.0.0.1.
	argvs := [][]string{{hubBinary, "-addr", hubAddr, "-demo", "-log-level", "warn", "-max-conns", "0", "-max-conns-per-addr", "0"}}
	urls := []string{"http://" + hubAddr + "/healthz"}
	s.hubMetrics = "http://" + hubAddr + "/metrics"
	if profiles {
		admin, err := freeAddr()
		if err != nil {
			return nil, err
		}
		argvs[0] = append(argvs[0], "-metrics-addr", admin, "-pprof")
		s.hubMetrics = "http://" + admin + "/metrics"
	}
	if withFloor {
		argvs = append(argvs, []string{self, "floor", "-addr", floorAddr})
		urls = append(urls, "http://"+floorAddr+"/metrics")
		s.floorURL = "ws://" + floorAddr + "/"
	}
	s.hubURL = "ws://" + hubAddr + "/rpc"
	if err := s.launch(ctx, argvs, urls, startWait); err != nil {
		return nil, err
	}
	return s, nil
}

// startMetered is startServers with a floor, telling l the servers'
// process ids, so that their usage is counted (cpu.go), and where the
// hub's /metrics are (with l.profiles, beside its profiles).
func startMetered(ctx context.Context, hubBinary string, l *load) (*servers, error) {
	s, err := startServers(ctx, hubBinary, true, l.profiles != "")
	if err != nil {
		return nil, err
	}
	l.pids = map[string]int{s.hubURL: s.procs[0].pid(), s.floorURL: s.procs[1].pid()}
	l.metrics = map[string]string{s.hubURL: s.hubMetrics}
	return s, nil
}

// launch starts a process for each argv, then waits up to d until each of
// urls answers 200 (urls[i] served by argvs[i]); on failure it stops every
// process of s.
func (s *servers) launch(ctx context.Context, argvs [][]string, urls []string, d time.Duration) error {
	var started []*proc
	for _, argv := range argvs {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			s.stop()
			return err
		}
		p := &proc{cmd: cmd, ended: make(chan struct{})}
		go func() { p.err = cmd.Wait(); close(p.ended) }()
		s.procs = append(s.procs, p)
		started = append(started, p)
	}
	for i, u := range urls {
		if err := waitHTTP(ctx, u, d, started[i]); err != nil {
			s.stop()
			return err
		}
	}
	return nil
}

// stop ends the processes with SIGTERM, then SIGKILL after 10 s.
func (s *servers) stop() {
	for _, p := range s.procs {
		p.stop(10 * time.Second)
	}
}

// stop ends p with SIGTERM, then SIGKILL after grace, and waits for it.
func (p *proc) stop(grace time.Duration) {
	select {
	case <-p.ended:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.ended:
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
		<-p.ended
	}
}

// hubAndFloorAddrs returns two free addresses of 127.0.0.1, for a hub and
// a floor.
func hubAndFloorAddrs() (hub, floor string, err error) {
	if hub, err = freeAddr(); err != nil {
		return "", "", err
	}
	if floor, err = freeAddr(); err != nil {
		return "", "", err
	}
	return hub, floor, nil
}

// freeAddr returns a free local address, outside the ephemeral ports
// that the peers' connections take, for a server that scale restarts on
// it.
func freeAddr() (string, error) { return port.Restartable() }

// The load generator's HTTP requests to the servers close their
// connection once answered: an idle keep-alive connection would hold a
// place under a hub's -max-conns beside its peers. probeClient asks a
// starting server whether it is up (a server too busy to answer within
// its timeout is asked again); metricsClient reads /metrics.
var (
	closingTransport = &http.Transport{DisableKeepAlives: true}
	probeClient      = &http.Client{Timeout: 5 * time.Second, Transport: closingTransport}
	metricsClient    = &http.Client{Timeout: 30 * time.Second, Transport: closingTransport}
)

// waitHTTP polls u, served by p, until it answers 200, for up to d; it
// gives up at once if p exits.
func waitHTTP(ctx context.Context, u string, d time.Duration, p *proc) error {
	start := time.Now()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		resp, err := probeClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = errors.New(resp.Status)
		}
		select {
		case <-p.ended:
			return fmt.Errorf("%s: the process ended before it answered (%v)", u, p.err)
		case <-ctx.Done():
			return fmt.Errorf("%s did not answer: %w", u, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Since(start) > d {
			return fmt.Errorf("%s did not answer within %v: %w", u, d, err)
		}
	}
}
