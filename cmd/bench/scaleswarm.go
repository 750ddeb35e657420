package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// This file holds the scale command's side of its load generator: the
// "bench swarm" processes (swarm.go) it starts and gives orders to.

// swarmProc is a running "bench swarm".
type swarmProc struct {
	cmd *exec.Cmd
	n   int // its peers
	in  io.WriteCloser
	out *bufio.Scanner
}

// startSwarm starts a swarm of n peers, connecting them to urls from
// source address src ("" for any); connected must then be awaited.
func startSwarm(n int, urls []string, src string, dialers int) (*swarmProc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "swarm", "-n", strconv.Itoa(n), "-urls", strings.Join(urls, ","), "-src", src, "-dialers", strconv.Itoa(dialers))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 1<<20)
	return &swarmProc{cmd: cmd, n: n, in: in, out: sc}, nil
}

// answer reads the swarm's next JSON line into v.
func (s *swarmProc) answer(v any) error {
	if !s.out.Scan() {
		err := s.out.Err()
		if err == nil {
			err = errors.New("the swarm ended")
		}
		return err
	}
	return json.Unmarshal(s.out.Bytes(), v)
}

// order sends one order and reads its answer into v.
func (s *swarmProc) order(line string, v any) error {
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		return err
	}
	return s.answer(v)
}

// stop closes the swarm's peers (once: it exits), or kills it if it does
// not answer.
func (s *swarmProc) stop() {
	done := make(chan struct{})
	go func() {
		var v map[string]int
		_ = s.order("close", &v)
		_ = s.in.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		_ = s.cmd.Process.Kill()
	}
	_ = s.cmd.Wait()
}

// swarms is a set of swarm processes ordered together.
type swarms []*swarmProc

// peers returns how many peers the swarms hold.
func (ss swarms) peers() int {
	n := 0
	for _, s := range ss {
		n += s.n
	}
	return n
}

// pids returns the swarms' process ids.
func (ss swarms) pids() []int {
	var p []int
	for _, s := range ss {
		p = append(p, s.cmd.Process.Pid)
	}
	return p
}

func (ss swarms) stop() {
	var wg sync.WaitGroup
	for _, s := range ss {
		wg.Go(s.stop)
	}
	wg.Wait()
}

// each sends line to every swarm at once and decodes the answers.
func each[T any](ss swarms, line string) ([]T, error) {
	out := make([]T, len(ss))
	errs := make([]error, len(ss))
	var wg sync.WaitGroup
	for i, s := range ss {
		wg.Go(func() {
			if line == "" {
				errs[i] = s.answer(&out[i])
			} else {
				errs[i] = s.order(line, &out[i])
			}
		})
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// launchSwarms starts swarms of n peers in all, spread over urls, each
// from its own loopback address 127.0.0.2 and up, and waits until every
// peer is connected; it returns the time that took.
func launchSwarms(n, count int, urls []string, dialers int) (swarms, float64, error) {
	var ss swarms
	start := time.Now()
	for i := range count {
		k := n / count
		if i < n%count {
			k++
		}
		s, err := startSwarm(k, urls, fmt.Sprintf("127.0.0.%d", 2+i), dialers)
		if err != nil {
			ss.stop()
			return nil, 0, err
		}
		ss = append(ss, s)
	}
	type connected struct {
		Connected int   `json:"connected"`
		Retries   int64 `json:"retries"`
	}
	got, err := each[connected](ss, "")
	if err != nil {
		ss.stop()
		return nil, 0, fmt.Errorf("connecting: %w", err)
	}
	total := 0
	var retries int64
	for _, g := range got {
		total += g.Connected
		retries += g.Retries
	}
	if retries > 0 {
		logf("%d dials timed out or failed and were tried again", retries)
	}
	if total != n {
		ss.stop()
		return nil, 0, fmt.Errorf("%d of %d peers connected", total, n)
	}
	return ss, time.Since(start).Seconds(), nil
}

// subscribe has every peer of ss subscribe to the swarms' topic.
func (ss swarms) subscribe() error {
	type subscribed struct {
		Subscribed int    `json:"subscribed"`
		Err        string `json:"error"`
	}
	got, err := each[subscribed](ss, "subscribe")
	for _, g := range got {
		if g.Err != "" {
			err = errors.Join(err, errors.New(g.Err))
		}
	}
	return err
}

// wait waits up to d for every peer to hold want events and merges the
// swarms' reports.
func (ss swarms) wait(want int, d time.Duration) (swarmReport, error) {
	got, err := each[swarmReport](ss, fmt.Sprintf("wait %d %g", want, d.Seconds()))
	r := swarmReport{Hist: histogram{}}
	for _, g := range got {
		r.Peers += g.Peers
		r.Complete += g.Complete
		r.Missing += g.Missing
		r.Dups += g.Dups
		r.Again += g.Again
		r.Reconnects += g.Reconnects
		r.LastReconnect = max(r.LastReconnect, g.LastReconnect)
		r.LastDelivery = max(r.LastDelivery, g.LastDelivery)
		r.Deliveries += g.Deliveries
		r.Hist.merge(g.Hist)
		if r.PeersPerHub == nil { // the swarms share the list of hubs
			r.PeersPerHub = make([]int, len(g.PeersPerHub))
		}
		for i, n := range g.PeersPerHub {
			r.PeersPerHub[i] += n
		}
		for k, n := range g.DialErrors {
			if r.DialErrors == nil {
				r.DialErrors = make(map[string]int64)
			}
			r.DialErrors[k] += n
		}
		if r.OtherError == "" {
			r.OtherError = g.OtherError
		}
	}
	return r, err
}
