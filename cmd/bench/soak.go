package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// soakCmd runs a mixed load for a while: callers making calls and sending
// notifications, a publisher publishing at a steady rate to subscribers.
// Every interval it prints the counts so far, the p99 call latency of the
// interval, and the hub's memory and goroutines from its /metrics. At the
// end it checks that every event the hub said it delivered arrived.
func soakCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	duration := fs.Duration("duration", time.Minute, "how long to run")
	interval := fs.Duration("interval", 10*time.Second, "how often to print")
	callers := fs.Int("callers", 8, "connections making calls")
	subscribers := fs.Int("subscribers", 200, "connections subscribed to the topic")
	eventRate := fs.Int("rate", 500, "events published per second")
	startBin := fs.String("start", "", "start the hub `binary` (with -demo) on a free loopback port, instead of taking a URL")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: bench soak [flags] HUB_URL\n       bench soak [flags] -start HUB_BINARY")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	u := fs.Arg(0)
	switch {
	case *startBin != "" && fs.NArg() == 0:
		servers, err := startServers(ctx, *startBin, false, false)
		if err != nil {
			return err
		}
		defer servers.stop()
		u = servers.hubURL
	case *startBin != "" || fs.NArg() != 1:
		fs.Usage()
		return errors.New("want a hub URL, or -start")
	}
	murl := metricsURL(u)
	l := &load{dialers: 16}

	subs, err := dialMany(ctx, l, u, *subscribers,
		[]byte(`{"jsonrpc":"2.0","method":"rpc.subscribe","params":["soak.events"],"id":1}`))
	if err != nil {
		return err
	}
	defer closeAll(subs)
	var received atomic.Int64
	var readers sync.WaitGroup
	for _, s := range subs {
		readers.Go(func() {
			for {
				if _, err := s.read(); err != nil {
					return
				}
				received.Add(1)
			}
		})
	}

	ctx, stop := context.WithTimeout(ctx, *duration)
	defer stop()
	var calls, notes, failures atomic.Int64
	var latMu sync.Mutex
	var lat []time.Duration
	var workers sync.WaitGroup
	for i := range *callers {
		c, err := dial(ctx, u)
		if err != nil {
			return err
		}
		defer c.close()
		workers.Go(func() {
			call := callFrame(i + 1)
			note := []byte(`{"jsonrpc":"2.0","method":"notify_hello","params":[7]}`)
			mine := make([]time.Duration, 0, 1024)
			for n := 0; ctx.Err() == nil; n++ {
				if n%10 == 9 { // one notification in ten
					if c.ws.Write(ctx, websocket.MessageText, note) == nil {
						notes.Add(1)
					}
					continue
				}
				t0 := time.Now()
				if _, err := c.roundTrip(call); err != nil {
					if ctx.Err() == nil {
						failures.Add(1)
					}
					return
				}
				mine = append(mine, time.Since(t0))
				calls.Add(1)
				if len(mine) == cap(mine) {
					latMu.Lock()
					lat = append(lat, mine...)
					latMu.Unlock()
					mine = mine[:0]
				}
			}
		})
	}

	// The publisher: a steady rate, counting what the hub says it delivered.
	var published, delivered atomic.Int64
	workers.Go(func() {
		c, err := dial(ctx, u)
		if err != nil {
			failures.Add(1)
			return
		}
		defer c.close()
		tick := time.NewTicker(time.Second / time.Duration(max(*eventRate, 1)))
		defer tick.Stop()
		for n := 1; ; n++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			reply, err := c.roundTrip(fmt.Appendf(nil,
				`{"jsonrpc":"2.0","method":"rpc.publish","params":{"topic":"soak.events","data":{"n":%d}},"id":%d}`, n, n))
			if err != nil {
				if ctx.Err() == nil {
					failures.Add(1)
				}
				return
			}
			var r struct {
				Result struct{ Delivered int64 } `json:"result"`
			}
			if json.Unmarshal(reply, &r) != nil {
				failures.Add(1)
				continue
			}
			published.Add(1)
			delivered.Add(r.Result.Delivered)
		}
	})

	const row = "%8s %10s %14s %9s %10s %12s %12s %9s %10s %11s\n"
	fmt.Printf(row, "elapsed", "calls", "notifications", "failures", "published", "delivered", "received", "call p99", "hub RSS", "goroutines")
	start := time.Now()
	report := func() {
		latMu.Lock()
		window := lat
		lat = nil
		latMu.Unlock()
		p99 := "-"
		if len(window) > 0 {
			slices.Sort(window)
			p99 = micros(float64(window[len(window)*99/100].Nanoseconds()) / 1e3)
		}
		mctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		rss, _ := metric(mctx, murl, "process_resident_memory_bytes")
		goroutines, _ := metric(mctx, murl, "go_goroutines")
		cancel()
		fmt.Printf(row, time.Since(start).Round(time.Second), human(float64(calls.Load())), human(float64(notes.Load())),
			strconv.FormatInt(failures.Load(), 10), human(float64(published.Load())), human(float64(delivered.Load())),
			human(float64(received.Load())), p99, fmt.Sprintf("%.1f MiB", rss/(1<<20)), strconv.Itoa(int(goroutines)))
	}
	tick := time.NewTicker(*interval)
	defer tick.Stop()
loop:
	for {
		select {
		case <-tick.C:
			report()
		case <-ctx.Done():
			break loop
		}
	}
	workers.Wait()
	// Every delivered event is on its way: wait for the readers to count
	// them, within a bound.
	deadline := time.Now().Add(10 * time.Second)
	for received.Load() < delivered.Load() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	report()
	closeAll(subs)
	readers.Wait()
	switch {
	case received.Load() != delivered.Load():
		return fmt.Errorf("the hub delivered %d events, subscribers received %d", delivered.Load(), received.Load())
	case failures.Load() > 0:
		return fmt.Errorf("%d calls or publishes failed", failures.Load())
	}
	fmt.Printf("ok: %d events published, %d delivered, all received; %d calls, %d notifications\n",
		published.Load(), delivered.Load(), calls.Load(), notes.Load())
	return nil
}
