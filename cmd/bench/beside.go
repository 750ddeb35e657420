package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"
)

// The beside scenario measures what the neighbor scenario does, a light
// client's sequential calls beside a heavy client, with the heavy client
// in a process of its own and against the floor as well. In the neighbor
// scenario both clients share this process, whose own scheduler then
// delays the light client's replies as much as the server does; here the
// light client has this process to itself, and the floor's figure shows
// what a server that does no JSON-RPC work at all gives beside the same
// neighbor.

// besideScenario runs the heavy client (l.neighborConns connections with
// l.neighborWindow calls in flight on each) as a child process, "bench
// heavy", then measures sequential calls on one connection beside it.
func besideScenario(ctx context.Context, l *load, u string) (figure, error) {
	self, err := os.Executable()
	if err != nil {
		return figure{}, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := exec.CommandContext(ctx, self, "heavy",
		"-conns", strconv.Itoa(l.neighborConns), "-window", strconv.Itoa(l.neighborWindow),
		"-duration", (l.duration + l.duration/2).String(), u)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return figure{}, err
	}
	if err := cmd.Start(); err != nil {
		return figure{}, err
	}
	waited := false
	defer func() {
		if !waited {
			cancel()
			_ = cmd.Wait()
		}
	}()
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
		return figure{}, fmt.Errorf("beside: the heavy client did not start: %q %v", line, err)
	}
	light, err := dial(ctx, u)
	if err != nil {
		return figure{}, err
	}
	defer light.close()
	fig, err := sequential(l, echoCall(light))
	waited = true
	if werr := cmd.Wait(); werr != nil && err == nil {
		err = fmt.Errorf("beside: the heavy client: %w", werr)
	}
	return fig, err
}

// heavyCmd is "bench heavy": the heavy client of the beside scenario. It
// prints "ready" once its connections are open, then keeps window calls in
// flight on each until duration has passed.
func heavyCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("heavy", flag.ContinueOnError)
	n := fs.Int("conns", 8, "connections")
	window := fs.Int("window", 200, "calls in flight on each")
	duration := fs.Duration("duration", 3*time.Second, "how long to call")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("usage: bench heavy [flags] URL")
	}
	conns, err := dialMany(ctx, &load{dialers: *n}, fs.Arg(0), *n, nil)
	if err != nil {
		return err
	}
	defer closeAll(conns)
	fmt.Println("ready")
	start := time.Now()
	stop := start.Add(*duration)
	var wg sync.WaitGroup
	errs := make([]error, len(conns))
	done := make([]int, len(conns))
	for i, c := range conns {
		wg.Go(func() { done[i], errs[i] = pipeline(ctx, c, *window, stop) })
	}
	wg.Wait()
	total := 0
	for _, n := range done {
		total += n
	}
	// On stderr, which the beside scenario passes on: what the heavy
	// client got while the light one was measured.
	fmt.Fprintf(os.Stderr, "heavy: %d calls/s on %d connections\n", int(float64(total)/time.Since(start).Seconds()), len(conns))
	return errors.Join(errs...)
}
