package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/hub/natsbroker"
	"github.com/switchboard-rpc/switchboard/server"
	"github.com/switchboard-rpc/switchboard/server/demo"
	"github.com/switchboard-rpc/switchboard/server/mcp"
	"github.com/switchboard-rpc/switchboard/server/prom"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The beside scenario starts this binary as its heavy client, and the
	// scale command as its swarms and floor.
	if len(os.Args) > 1 && (os.Args[1] == "heavy" || os.Args[1] == "swarm" || os.Args[1] == "floor") {
		if err := run(context.Background(), os.Args[1:]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// TestScenarios runs every scenario, small, against a demo hub and the
// floor in this process: each must measure something, and the report must
// show every scenario.
func TestScenarios(t *testing.T) {
	h := hub.New(&hub.Options{Policy: hub.AllowAll})
	m := prom.New()
	srv := server.New(&server.Options{Router: demo.Mux(), Hub: h, OnServe: m.Observe})
	m.Watch(srv)
	agents := mcp.New(srv, nil)
	srv.Handle("/mcp", agents)
	routes := http.NewServeMux()
	routes.Handle("/", srv)
	routes.Handle("/metrics", m)
	hubTS := httptest.NewServer(routes)
	defer hubTS.Close()
	defer srv.Shutdown(t.Context())
	defer agents.Shutdown(t.Context())
	floorTS := httptest.NewServer(newFloor(floorWork{}))
	defer floorTS.Close()

	// 300 ms per timed scenario: with the race detector, on a busy
	// machine, 100 ms sometimes saw no call complete.
	l := &load{duration: 300 * time.Millisecond, window: 8, conns: 4, batch: 10, subscribers: 20, events: 5, idle: 20, dialers: 4, neighborConns: 2, neighborWindow: 8, addressees: 20}
	hubURL := "ws" + strings.TrimPrefix(hubTS.URL, "http") + "/rpc"
	floorURL := "ws" + strings.TrimPrefix(floorTS.URL, "http") + "/"
	var results []result
	for _, s := range scenarios {
		switch s.name {
		case "cluster":
			l.clusterA, l.clusterB = startCluster2(t, false)
		case "cluster-js":
			l.jsA, l.jsB = startCluster2(t, true)
		}
		r, err := measure(t.Context(), s, l, 1, hubURL, floorURL)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		// The CPU time of the cluster and mcp scenarios, read from the
		// process's counters, may not move in so small a run: they must
		// run, not measure.
		if s.name != "idle" && !strings.HasPrefix(s.name, "cluster") && !strings.HasPrefix(s.name, "mcp") && (r.Hub <= 0 || r.Floor <= 0 || r.Ratio <= 0) {
			t.Errorf("%s: hub %v, floor %v, ratio %v", s.name, r.Hub, r.Floor, r.Ratio)
		}
		if (s.name == "seq" || s.name == "conns" || s.name == "fanout") && (r.HubP50 <= 0 || r.HubP99 < r.HubP50) {
			t.Errorf("%s: hub p50 %v, p99 %v", s.name, r.HubP50, r.HubP99)
		}
		results = append(results, r)
	}

	var table bytes.Buffer
	printTable(&table, results)
	dir := t.TempDir()
	chart := filepath.Join(dir, "img", "ratios.svg")
	page := page(meta{Reps: 1}, results, "img/ratios.svg", []byte("BenchmarkX-2  10  100 ns/op\nnoise\n"), nil)
	if err := os.MkdirAll(filepath.Dir(chart), 0o755); err != nil {
		t.Fatal(err)
	}
	svg := ratioChart(results)
	for _, s := range scenarios {
		if !strings.Contains(table.String(), s.name) || !bytes.Contains(page, []byte("| "+s.name+" |")) ||
			!bytes.Contains(svg, []byte(scenarioText[s.name])) {
			t.Errorf("%s missing from the table, page or chart", s.name)
		}
	}
	if !bytes.Contains(page, []byte("BenchmarkX-2")) || bytes.Contains(page, []byte("noise")) {
		t.Errorf("micro-benchmarks not filtered into the page:\n%s", page)
	}
}

// TestReportShape checks that the page report writes is the table, the
// chart and how to rerun them, and links to the history of changes rather
// than holding it, even with a history page beside it.
func TestReportShape(t *testing.T) {
	dir := t.TempDir()
	results := filepath.Join(dir, "bench.jsonl")
	lines := `{"meta":{"date":"2026-01-02","go":"go1.26","cpus":2,"reps":3}}` + "\n" +
		`{"scenario":"seq","unit":"calls/s","hub":900,"floor":1000,"ratio":0.9,"target":0.9,"reps":3}` + "\n" +
		`{"scenario":"mcp","unit":"ns CPU/call","hub":300000,"floor":100000,"ratio":3,"target":1.5,"lowerIsBetter":true,"hubPerSecond":1500,"floorPerSecond":4000,"reps":3}` + "\n"
	if err := os.WriteFile(results, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "benchmarks-history.md"), []byte("## What changed, measured\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "benchmarks.md")
	if err := reportCmd([]string{"-o", out, "-chart", filepath.Join(dir, "img", "ratios.svg"), results}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| seq | sequential calls, 1 connection |", "![Ratios to the floor](img/ratios.svg)",
		"Rerun it with `make bench`", "[benchmarks-history.md](benchmarks-history.md)",
		"| mcp | MCP tools/call vs a forwarded POST, CPU per call | 300,000 ns CPU/call | 100,000 ns CPU/call | 3.00 |",
		"**mcp** 1,500 against 4,000."} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("%q missing from the page:\n%s", want, b)
		}
	}
	if bytes.Contains(b, []byte("## What changed, measured")) {
		t.Errorf("the history is in the page:\n%s", b)
	}
}

// startCluster2 runs two hubs of a cluster in this process, over a NATS
// server of its own, until the test ends, and returns their URLs.
func startCluster2(t *testing.T, jetStream bool) (a, b string) {
	t.Helper()
	ns, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: natsserver.RANDOM_PORT, NoSigs: true, NoLog: true, JetStream: jetStream, StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	if !ns.ReadyForConnections(5 * time.Second) {
		t.Fatal("NATS not ready within 5s")
	}
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	var urls [2]string
	for i := range urls {
		br, err := natsbroker.Connect(t.Context(), &natsbroker.Options{URLs: ns.ClientURL(), JetStream: jetStream, Memory: true})
		if err != nil {
			t.Fatal(err)
		}
		h := hub.New(&hub.Options{Policy: hub.AllowAll, Broker: br.HubBroker()})
		if err := br.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		m := prom.New()
		srv := server.New(&server.Options{Hub: h})
		m.Watch(srv)
		routes := http.NewServeMux()
		routes.Handle("/", srv)
		routes.Handle("/metrics", m)
		ts := httptest.NewServer(routes)
		t.Cleanup(func() {
			_ = srv.Shutdown(context.Background())
			ts.Close()
			_ = br.Close()
		})
		urls[i] = "ws" + strings.TrimPrefix(ts.URL, "http") + "/rpc"
	}
	return urls[0], urls[1]
}

// The fanout scenario's subscribers answer the hub's pings while the
// others are still being opened: 10,000 connections can take longer to
// open than a hub's ping interval and timeout together. Here the hub
// pings every 100 ms and waits 2 s for the pong (a loaded machine may
// keep a reading subscriber from its pong for a second), and each of the
// 100 subscribers takes 40 ms to open, one at a time: the first ones
// would wait 4 s to read.
func TestFanoutAnswersPingsWhileSubscribing(t *testing.T) {
	h := hub.New(&hub.Options{Policy: hub.AllowAll})
	srv := server.New(&server.Options{Hub: h, PingInterval: 100 * time.Millisecond, PingTimeout: 2 * time.Second})
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(40 * time.Millisecond) // a slow handshake, not a wait for an event
		srv.ServeHTTP(w, r)
	})
	ts := httptest.NewServer(slow)
	defer ts.Close()
	defer srv.Shutdown(t.Context())
	l := &load{subscribers: 100, events: 3, dialers: 1}
	u := "ws" + strings.TrimPrefix(ts.URL, "http") + "/rpc"
	start := time.Now()
	if _, err := fanoutScenario(t.Context(), l, u); err != nil {
		t.Fatalf("%v (after %v)", err, time.Since(start))
	}
}

// The bare peer serves the call scenarios: run measures it as it does
// the hub.
func TestBarePeer(t *testing.T) {
	ts := httptest.NewServer(newBarePeer())
	defer ts.Close()
	floorTS := httptest.NewServer(newFloor(floorWork{}))
	defer floorTS.Close()
	l := &load{duration: 300 * time.Millisecond, window: 8, conns: 4, batch: 10, dialers: 4}
	u := "ws" + strings.TrimPrefix(ts.URL, "http") + "/"
	floorURL := "ws" + strings.TrimPrefix(floorTS.URL, "http") + "/"
	c, err := dial(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	reply, err := c.roundTrip(callFrame(7))
	c.close()
	if err != nil || !strings.Contains(string(reply), `"result":[1]`) || !strings.Contains(string(reply), `"id":7`) {
		t.Fatalf("echo: %s, %v; want result [1] for id 7", reply, err)
	}
	for _, s := range scenarios {
		switch s.name {
		case "seq", "pipe", "conns", "batch":
		default:
			continue
		}
		r, err := measure(t.Context(), s, l, 1, u, floorURL)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if r.Hub <= 0 || r.Ratio <= 0 {
			t.Errorf("%s: peer %v, ratio %v", s.name, r.Hub, r.Ratio)
		}
	}
}

// The floor told to work answers as it does without, or, with rpc, as a
// JSON-RPC server echoing the call's params.
func TestFloorWork(t *testing.T) {
	for _, tc := range []struct {
		work floorWork
		want string
	}{
		{floorWork{}, string(floorReply)},
		{floorWork{spin: time.Microsecond, allocs: 10}, string(floorReply)},
		{floorWork{rpc: true}, `{"jsonrpc":"2.0","result":[1],"id":7}`},
	} {
		ts := httptest.NewServer(newFloor(tc.work))
		c, err := dial(t.Context(), "ws"+strings.TrimPrefix(ts.URL, "http")+"/")
		if err != nil {
			ts.Close()
			t.Fatal(err)
		}
		reply, err := c.roundTrip(callFrame(7))
		c.close()
		ts.Close()
		if err != nil || string(reply) != tc.want {
			t.Errorf("%+v: %s, %v; want %s", tc.work, reply, err, tc.want)
		}
	}
}

// TestMeasureSpread checks that a result carries the median of the
// per-run ratios and the lowest and the highest of them, and that the
// table, the page and the chart show that spread.
func TestMeasureSpread(t *testing.T) {
	hubRuns := []float64{90, 100, 80, 120, 95}
	runs := 0
	s := &scenario{name: "seq", unit: "calls/s", target: 0.9,
		run: func(_ context.Context, _ *load, u string) (figure, error) {
			if u == "floor" {
				return figure{value: 100}, nil
			}
			runs++
			return figure{value: hubRuns[runs-1]}, nil
		}}
	r, err := measure(t.Context(), s, &load{}, len(hubRuns), "hub", "floor")
	if err != nil {
		t.Fatal(err)
	}
	if r.Ratio != 0.95 || r.RatioLow != 0.8 || r.RatioHigh != 1.2 || r.Reps != 5 {
		t.Fatalf("ratio %v (%v-%v) over %d runs, want 0.95 (0.8-1.2) over 5", r.Ratio, r.RatioLow, r.RatioHigh, r.Reps)
	}
	var table bytes.Buffer
	printTable(&table, []result{r})
	page := page(meta{Reps: 5}, []result{r}, "ratios.svg", nil, nil)
	svg := ratioChart([]result{r})
	if !strings.Contains(table.String(), "0.80-1.20") || !bytes.Contains(page, []byte("| 0.95 | 0.80-1.20 |")) ||
		!bytes.Contains(svg, []byte("<path")) {
		t.Errorf("spread missing:\n%s\n%s\n%s", table.String(), page, svg)
	}

	// One run has no spread to show.
	r.Reps = 1
	if got := r.spreadText(); got != "-" {
		t.Errorf("one run: spread %q, want -", got)
	}
	if bytes.Contains(ratioChart([]result{r}), []byte("<path")) {
		t.Error("one run: the chart draws a whisker")
	}
}

// TestRatioText checks that a ratio is shown on the same side of its
// target as it is.
func TestRatioText(t *testing.T) {
	tests := []struct {
		r    result
		want string
	}{
		{result{Ratio: 0.8312, Target: 0.9}, "0.83"},
		{result{Ratio: 0.9997, Target: 1.0}, "0.9997"},
		{result{Ratio: 1.0004, Target: 1.0}, "1.00"},
		{result{Ratio: 0.7996, Target: 0.8}, "0.7996"},
		{result{Ratio: 1.2004, Target: 1.2, LowerIsBetter: true}, "1.2004"},
		{result{Ratio: 0.9997}, "1.00"},
	}
	for _, tt := range tests {
		tt.r.Floor = 1
		if got := tt.r.ratioText(); got != tt.want {
			t.Errorf("ratio %v, target %v (lower is better: %v): %q, want %q", tt.r.Ratio, tt.r.Target, tt.r.LowerIsBetter, got, tt.want)
		}
	}
}

// The floor's relay passes the caller's frames to the target and the
// target's back, as they are; a caller with no target is closed rather
// than left waiting.
func TestFloorRelay(t *testing.T) {
	ts := httptest.NewServer(newFloor(floorWork{}))
	defer ts.Close()
	base := "ws" + strings.TrimPrefix(ts.URL, "http")

	caller, err := dial(t.Context(), base+"/relay")
	if err != nil {
		t.Fatal(err)
	}
	if reply, err := caller.roundTrip(callFrame(1)); err == nil || websocket.CloseStatus(err) != websocket.StatusTryAgainLater {
		t.Errorf("no target: %s, %v; want closed with %d", reply, err, websocket.StatusTryAgainLater)
	}
	caller.close()

	target, err := dial(t.Context(), base+"/relay-target")
	if err != nil {
		t.Fatal(err)
	}
	defer target.close()
	if msg, err := target.read(); err != nil || !bytes.Equal(msg, relayReady) {
		t.Fatalf("target's first frame: %s, %v; want %s", msg, err, relayReady)
	}
	if caller, err = dial(t.Context(), base+"/relay"); err != nil {
		t.Fatal(err)
	}
	defer caller.close()
	odd := `{"id": "x\u00e9", "method":"rpc.call",  "params":{"peer":"p"}}`
	if err := caller.ws.Write(t.Context(), websocket.MessageText, []byte(odd)); err != nil {
		t.Fatal(err)
	}
	if msg, err := target.read(); err != nil || string(msg) != odd {
		t.Fatalf("target got %s, %v; want %s", msg, err, odd)
	}
	answer := `{"jsonrpc":"2.0","id": "x\u00e9" ,"result":[1]}`
	if err := target.ws.Write(t.Context(), websocket.MessageText, []byte(answer)); err != nil {
		t.Fatal(err)
	}
	if msg, err := caller.read(); err != nil || string(msg) != answer {
		t.Fatalf("caller got %s, %v; want %s", msg, err, answer)
	}
}

// A scenario with floorRun runs run on the hub and floorRun on the floor;
// one onFloor runs run and baseline both on the floor, and needs one.
// (TestScenarios fails if addressed-relay or relay-floor runs a leg where
// it cannot: the relay is only on the floor, rpc.whoami only on the hub.)
func TestMeasureLegs(t *testing.T) {
	var ran []string
	leg := func(what string) func(context.Context, *load, string) (figure, error) {
		return func(_ context.Context, _ *load, u string) (figure, error) {
			ran = append(ran, what+"@"+u)
			return figure{value: 1}, nil
		}
	}
	for _, tc := range []struct {
		s    scenario
		want []string
	}{
		{scenario{name: "a", run: leg("run"), floorRun: leg("floorRun")}, []string{"run@hub", "floorRun@floor"}},
		{scenario{name: "b", run: leg("run"), baseline: leg("baseline"), onFloor: true}, []string{"run@floor", "baseline@floor"}},
	} {
		ran = nil
		if _, err := measure(t.Context(), &tc.s, &load{}, 1, "hub", "floor"); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ran, tc.want) {
			t.Errorf("%s ran %v, want %v", tc.s.name, ran, tc.want)
		}
	}
	s := scenario{name: "b", run: leg("run"), baseline: leg("baseline"), onFloor: true}
	if _, err := measure(t.Context(), &s, &load{}, 1, "hub", ""); err == nil {
		t.Error("onFloor without a floor: no error")
	}
}

// With -profiles, each leg that goes to the started hub leaves its CPU
// profile and its allocations at its start and end; a leg elsewhere
// leaves none.
func TestProfiledLegs(t *testing.T) {
	var mu sync.Mutex
	var cpuSeconds []string
	admin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/debug/pprof/profile":
			mu.Lock()
			cpuSeconds = append(cpuSeconds, r.URL.Query().Get("seconds"))
			mu.Unlock()
			fmt.Fprint(w, "cpu")
		case "/debug/pprof/allocs":
			fmt.Fprint(w, "allocs")
		default:
			http.NotFound(w, r)
		}
	}))
	defer admin.Close()
	dir := t.TempDir()
	l := &load{duration: 1500 * time.Millisecond, profiles: dir, metrics: map[string]string{"hub": admin.URL + "/metrics"}}
	leg := func(context.Context, *load, string) (figure, error) { return figure{value: 1}, nil }
	s := scenario{name: "mcp", run: leg, baseline: leg}
	if _, err := measure(t.Context(), &s, l, 2, "hub", "floor"); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, rep := range []string{"0", "1"} {
		for _, leg := range []string{"hub", "floor"} {
			for _, kind := range []string{"cpu", "allocs", "allocs-before"} {
				name := "mcp-" + leg + "-" + rep + "." + kind + ".pprof"
				if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || !strings.HasPrefix(kind, string(b)) {
					t.Errorf("%s: %q, %v", name, b, err)
				}
				got = append(got, name)
			}
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != len(got) {
		t.Errorf("%d files, want %d", len(entries), len(got))
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(cpuSeconds, []string{"2", "2", "2", "2"}) {
		t.Errorf("CPU profiles of %v s, want 4 of 2 s (the legs' 1.5 s)", cpuSeconds)
	}

	// A hub not started here has no profiles to give.
	l = &load{duration: time.Second, profiles: t.TempDir()}
	if _, err := measure(t.Context(), &s, l, 1, "hub", "floor"); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(l.profiles); len(entries) != 0 {
		t.Errorf("%d files for a hub with no profiles", len(entries))
	}
}
