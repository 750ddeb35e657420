package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/switchboard-rpc/switchboard/client"
)

// A scenario drives one kind of load against a target URL and returns its
// figure. Every request and event frame is encoded before the clock
// starts, so that the load generator spends its time on the wire.
type scenario struct {
	name, unit    string
	lowerIsBetter bool    // idle: bytes per connection
	target        float64 // the ratio to the floor to reach (at most, when lowerIsBetter); 0: none
	run           func(ctx context.Context, l *load, url string) (figure, error)
	// baseline, if set, is measured against the hub in place of the
	// floor: the client scenario compares the Go client with this
	// program's raw calls.
	baseline func(ctx context.Context, l *load, url string) (figure, error)
	// floorRun, if set, is run against the floor in place of run: the
	// addressed-relay scenario compares the hub's rpc.call with the
	// floor's relay.
	floorRun func(ctx context.Context, l *load, url string) (figure, error)
	// onFloor runs both run and baseline against the floor: relay-floor
	// compares two things the floor does, with no hub.
	onFloor bool
}

// figure is one measurement: value in the scenario's unit, and latency
// percentiles where the scenario measures them.
type figure struct {
	value    float64
	p50, p99 time.Duration
	// perSecond is the operations per second, also where value is not
	// (a CPU time per operation).
	perSecond float64
	// ops is how many operations (calls, requests, deliveries) the server
	// handled while used was counted (see cpu.go); metered says used was.
	ops     int
	used    procUsage
	metered bool
	// perfSyscalls counts every system call, if perf did (perf.go).
	perfSyscalls int64
	perf         bool
}

// load holds the sizes of the scenarios.
type load struct {
	duration    time.Duration // of each timed scenario
	window      int           // calls in flight, pipe
	conns       int           // connections, conns
	batch       int           // requests per batch
	subscribers int           // fanout
	events      int           // events published, fanout
	idle        int           // idle connections
	dialers     int           // connections opened at once

	neighborConns, neighborWindow int // the heavy neighbor, neighbor
	addressees                    int // peers of the topic, addressed-topic

	clusterA, clusterB string // two nodes of a cluster, cluster
	jsA, jsB           string // two nodes of a cluster with JetStream, cluster-js

	pids     map[string]int    // the server process behind a URL, for cpu.go
	perf     bool              // count system calls with perf (perf.go)
	metrics  map[string]string // the /metrics URL of a server, where not at its own URL
	profiles string            // the directory of the hub's profiles (pprof.go), or ""
}

var scenarios = []*scenario{
	{name: "idle", unit: "B/conn", lowerIsBetter: true, target: 1.2, run: idleScenario},
	{name: "seq", unit: "calls/s", target: 0.9, run: seqScenario},
	{name: "pipe", unit: "calls/s", target: 0.8, run: pipeScenario},
	{name: "conns", unit: "calls/s", target: 0.8, run: connsScenario},
	{name: "batch", unit: "requests/s", target: 0.5, run: batchScenario},
	{name: "fanout", unit: "deliveries/s", target: 1.0, run: fanoutScenario},
	{name: "client", unit: "calls/s", target: 0.8, run: clientScenario, baseline: seqScenario},
	{name: "handoff", unit: "calls/s", run: handoffScenario, baseline: seqScenario},
	{name: "clientpipe", unit: "calls/s", run: clientPipeScenario, baseline: pipeScenario},
	{name: "neighbor", unit: "calls/s", run: neighborScenario, baseline: seqScenario},
	{name: "beside", unit: "calls/s", run: besideScenario},
	{name: "cluster", unit: "ns CPU/delivery", lowerIsBetter: true, target: 2.0, run: crossNodeScenario, baseline: sameNodeScenario},
	{name: "addressed", unit: "calls/s", target: 0.5, run: addressedScenario, baseline: seqScenario},
	{name: "addressed-fwd", unit: "calls/s", target: 0.9, run: addressedScenario, baseline: forwardedScenario},
	{name: "addressed-topic", unit: "calls/s", target: 0.33, run: addressedTopicScenario, baseline: topicPublishScenario},
	{name: "addressed-relay", unit: "calls/s", run: addressedScenario, floorRun: relayScenario},
	{name: "relay-floor", unit: "calls/s", run: relayScenario, baseline: seqScenario, onFloor: true},
	{name: "cluster-js", unit: "ns CPU/delivery", lowerIsBetter: true, target: 2.0, run: crossNodeJSScenario, baseline: sameNodeJSScenario},
	{name: "mcp", unit: "ns CPU/call", lowerIsBetter: true, target: 1.5, run: mcpCallScenario, baseline: mcpForwardedScenario},
	{name: "mcp-list", unit: "ns CPU/list", lowerIsBetter: true, run: mcpListScenario, baseline: discoverScenario},
}

func callFrame(id int) []byte {
	return []byte(`{"jsonrpc":"2.0","method":"echo","params":[1],"id":` + strconv.Itoa(id) + `}`)
}

// echoCall returns a call on c made with raw frames, for calls.
func echoCall(c *conn) func() error {
	req := callFrame(1)
	return func() error {
		_, err := c.roundTrip(req)
		return err
	}
}

// calls makes call after call until the deadline and returns their
// latencies.
func calls(call func() error, deadline time.Time, lat []time.Duration) ([]time.Duration, error) {
	for time.Now().Before(deadline) {
		t0 := time.Now()
		if err := call(); err != nil {
			return lat, err
		}
		lat = append(lat, time.Since(t0))
	}
	return lat, nil
}

// sequential makes call after call, for a tenth of l.duration to warm up,
// then for l.duration, and returns the rate and latencies of the latter.
func sequential(l *load, call func() error) (figure, error) {
	warm, err := calls(call, time.Now().Add(l.duration/10), nil)
	if err != nil {
		return figure{}, err
	}
	start := time.Now()
	lat, err := calls(call, start.Add(l.duration), make([]time.Duration, 0, 1<<16))
	if err != nil {
		return figure{}, err
	}
	f := rate(len(lat), time.Since(start), lat)
	f.ops += len(warm)
	return f, nil
}

func seqScenario(ctx context.Context, l *load, u string) (figure, error) {
	c, err := dial(ctx, u)
	if err != nil {
		return figure{}, err
	}
	defer c.close()
	return sequential(l, echoCall(c))
}

// handoffScenario is seq with the replies read by a goroutine of their
// own, which hands each one to the caller over a channel: what any client
// must do that reads replies and the other side's calls while its callers
// wait, with nothing else of a client.
func handoffScenario(ctx context.Context, l *load, u string) (figure, error) {
	c, err := dial(ctx, u)
	if err != nil {
		return figure{}, err
	}
	replies := make(chan error)
	go func() {
		defer close(replies)
		for {
			_, err := c.read()
			replies <- err
			if err != nil {
				return
			}
		}
	}()
	defer func() {
		c.close()
		for range replies { // until the reader ends
		}
	}()
	req := callFrame(1)
	return sequential(l, func() error {
		if err := c.ws.Write(ctx, websocket.MessageText, req); err != nil {
			return err
		}
		return <-replies
	})
}

// clientScenario is seq made with the Go client instead of raw frames.
func clientScenario(ctx context.Context, l *load, u string) (figure, error) {
	c, err := client.Dial(ctx, u, nil)
	if err != nil {
		return figure{}, err
	}
	defer c.Close()
	params := []int{1}
	var result json.RawMessage
	return sequential(l, func() error { return c.Call(ctx, "echo", params, &result) })
}

// clientPipeScenario is pipe made with the Go client: l.window goroutines
// each calling in turn on one client.
func clientPipeScenario(ctx context.Context, l *load, u string) (figure, error) {
	c, err := client.Dial(ctx, u, nil)
	if err != nil {
		return figure{}, err
	}
	defer c.Close()
	start := time.Now()
	deadline := start.Add(l.duration)
	var n atomic.Int64
	errs := make([]error, l.window)
	var wg sync.WaitGroup
	for i := range l.window {
		wg.Go(func() {
			params := []int{i}
			var result json.RawMessage
			for time.Now().Before(deadline) {
				if err := c.Call(ctx, "echo", params, &result); err != nil {
					errs[i] = err
					return
				}
				n.Add(1)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return figure{}, err
	}
	return rate(int(n.Load()), time.Since(start), nil), nil
}

func connsScenario(ctx context.Context, l *load, u string) (figure, error) {
	conns, err := dialMany(ctx, l, u, l.conns, callFrame(1))
	if err != nil {
		return figure{}, err
	}
	defer closeAll(conns)
	lats := make([][]time.Duration, len(conns))
	errs := make([]error, len(conns))
	start := time.Now()
	deadline := start.Add(l.duration)
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Go(func() { lats[i], errs[i] = calls(echoCall(c), deadline, make([]time.Duration, 0, 1024)) })
	}
	wg.Wait()
	elapsed := time.Since(start)
	var all []time.Duration
	for i := range conns {
		if errs[i] != nil {
			return figure{}, errs[i]
		}
		all = append(all, lats[i]...)
	}
	f := rate(len(all), elapsed, all)
	f.ops += len(conns) // the first call on each
	return f, nil
}

// pipeScenario keeps l.window calls in flight on one connection.
func pipeScenario(ctx context.Context, l *load, u string) (figure, error) {
	c, err := dial(ctx, u)
	if err != nil {
		return figure{}, err
	}
	defer c.close()
	start := time.Now()
	n, err := pipeline(ctx, c, l.window, start.Add(l.duration))
	if err != nil {
		return figure{}, err
	}
	return rate(n, time.Since(start), nil), nil
}

// pipeline keeps window calls in flight on c until the deadline, then
// waits for the replies still due, and returns how many came. A slot is
// taken before each call is sent and given back when a reply arrives.
func pipeline(ctx context.Context, c *conn, window int, deadline time.Time) (int, error) {
	slots := make(chan struct{}, window)
	var replies atomic.Int64
	readErr := make(chan error, 1)
	go func() {
		for {
			if _, err := c.read(); err != nil {
				readErr <- err
				return
			}
			replies.Add(1)
			<-slots
		}
	}()
	frames := make([][]byte, 4096)
	for i := range frames {
		frames[i] = callFrame(i + 1)
	}
	for i := 0; time.Now().Before(deadline); i++ {
		select {
		case slots <- struct{}{}:
		case err := <-readErr:
			return 0, err
		}
		if err := c.ws.Write(ctx, websocket.MessageText, frames[i%len(frames)]); err != nil {
			return 0, err
		}
	}
	for range window { // wait for the calls still in flight
		select {
		case slots <- struct{}{}:
		case err := <-readErr:
			return 0, err
		case <-time.After(10 * time.Second):
			return 0, fmt.Errorf("replies stopped coming: %d in flight", len(slots))
		}
	}
	return int(replies.Load()), nil
}

// neighborScenario is seq while a heavy neighbor, on connections of its
// own, keeps l.neighborConns × l.neighborWindow calls in flight: does one
// client slow everyone? Its baseline is seq alone, against the same hub.
func neighborScenario(ctx context.Context, l *load, u string) (figure, error) {
	heavy, err := dialMany(ctx, l, u, l.neighborConns, nil)
	if err != nil {
		return figure{}, err
	}
	defer closeAll(heavy)
	light, err := dial(ctx, u)
	if err != nil {
		return figure{}, err
	}
	defer light.close()
	stop := time.Now().Add(l.duration + l.duration/5) // outlasts the light client
	var wg sync.WaitGroup
	errs := make([]error, len(heavy))
	for i, c := range heavy {
		wg.Go(func() { _, errs[i] = pipeline(ctx, c, l.neighborWindow, stop) })
	}
	fig, err := sequential(l, echoCall(light))
	wg.Wait()
	if err != nil {
		return figure{}, err
	}
	for _, err := range errs {
		if err != nil {
			return figure{}, fmt.Errorf("neighbor: %w", err)
		}
	}
	return fig, nil
}

func batchScenario(ctx context.Context, l *load, u string) (figure, error) {
	c, err := dial(ctx, u)
	if err != nil {
		return figure{}, err
	}
	defer c.close()
	var b bytes.Buffer
	b.WriteByte('[')
	for i := range l.batch {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(callFrame(i + 1))
	}
	b.WriteByte(']')
	req := b.Bytes()
	n := 0
	start := time.Now()
	for deadline := start.Add(l.duration); time.Now().Before(deadline); n++ {
		if _, err := c.roundTrip(req); err != nil {
			return figure{}, err
		}
	}
	return rate(n*l.batch, time.Since(start), nil), nil
}

// idleScenario opens l.idle connections, makes one call on each so that
// the server has set it up fully, lets the server settle, and reads how
// much its resident memory grew per connection. It is measured once per
// server process, first: memory freed by a later scenario would be
// reused, not counted.
func idleScenario(ctx context.Context, l *load, u string) (figure, error) {
	murl := l.metricsURL(u)
	before, err := residentOf(ctx, murl)
	if err != nil {
		return figure{}, err
	}
	conns, err := dialMany(ctx, l, u, l.idle, []byte(`{"jsonrpc":"2.0","method":"rpc.ping","id":1}`))
	if err != nil {
		return figure{}, err
	}
	defer closeAll(conns)
	// Let short-lived goroutines (a connection's first workers, say) end.
	select {
	case <-time.After(3 * time.Second):
	case <-ctx.Done():
		return figure{}, ctx.Err()
	}
	after, err := residentOf(ctx, murl)
	if err != nil {
		return figure{}, err
	}
	return figure{value: float64(after-before) / float64(l.idle)}, nil
}

// metricsURL is the /metrics address of the server at WebSocket URL u.
func (l *load) metricsURL(u string) string {
	if m, ok := l.metrics[u]; ok {
		return m
	}
	return metricsURL(u)
}

// metricsURL is the /metrics address of the server at WebSocket URL u,
// served where u is.
func metricsURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	p.Scheme = strings.Replace(p.Scheme, "ws", "http", 1)
	p.Path, p.RawQuery = "/metrics", ""
	return p.String()
}

func residentOf(ctx context.Context, murl string) (int64, error) {
	v, err := metric(ctx, murl, "process_resident_memory_bytes")
	return int64(v), err
}

// metric reads one unlabelled value from a Prometheus text page.
func metric(ctx context.Context, murl, name string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, murl, nil)
	if err != nil {
		return 0, err
	}
	resp, err := metricsClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s: %s", murl, resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, fmt.Errorf("%s: no %s", murl, name)
}

// rate makes a figure of n operations in d, with lat's percentiles.
func rate(n int, d time.Duration, lat []time.Duration) figure {
	f := figure{value: float64(n) / d.Seconds(), ops: n}
	f.perSecond = f.value
	if len(lat) > 0 {
		slices.Sort(lat)
		f.p50 = lat[len(lat)*50/100]
		f.p99 = lat[len(lat)*99/100]
	}
	return f
}
