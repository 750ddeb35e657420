package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// servers are the hub and floor processes that bench run -start runs.
type servers struct {
	hubURL, floorURL string
	procs            []*exec.Cmd
}

// startServers starts the hub binary with the demo methods and, if
// withFloor, this program's floor, each on a free loopback port, and waits
// until they answer HTTP.
func startServers(ctx context.Context, hubBinary string, withFloor bool) (*servers, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	s := &servers{}
	hubAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	floorAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	// No connection limits: every connection comes from 127.0.0.1.
	argvs := [][]string{{hubBinary, "-addr", hubAddr, "-demo", "-log-level", "warn", "-max-conns", "0", "-max-conns-per-addr", "0"}}
	urls := []string{"http://" + hubAddr + "/healthz"}
	if withFloor {
		argvs = append(argvs, []string{self, "floor", "-addr", floorAddr})
		urls = append(urls, "http://"+floorAddr+"/metrics")
		s.floorURL = "ws://" + floorAddr + "/"
	}
	s.hubURL = "ws://" + hubAddr + "/rpc"
	if err := s.launch(ctx, argvs, urls); err != nil {
		return nil, err
	}
	return s, nil
}

// launch starts a process for each argv, then waits until each of urls
// answers HTTP; on failure it stops what it started.
func (s *servers) launch(ctx context.Context, argvs [][]string, urls []string) error {
	for _, argv := range argvs {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			s.stop()
			return err
		}
		s.procs = append(s.procs, cmd)
	}
	for _, u := range urls {
		if err := waitHTTP(ctx, u); err != nil {
			s.stop()
			return err
		}
	}
	return nil
}

// stop ends the processes with SIGTERM, then SIGKILL after 10 s.
func (s *servers) stop() {
	for _, p := range s.procs {
		_ = p.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = p.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = p.Process.Kill()
			<-done
		}
	}
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// waitHTTP polls u until it answers 200, for up to 10 s.
func waitHTTP(ctx context.Context, u string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = errors.New(resp.Status)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s did not answer: %w", u, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
