// Package routing_test checks method routing end to end, against a real
// hub process: peers provide methods (a Go service, the rpc command as a
// process), and callers of every kind (the Go client, the rpc command, a
// raw WebSocket) call them through the hub, with load sharing,
// cancellation, progress, providers and callers that vanish mid-call, ids
// that must come back exactly, and nothing left behind after 10,000 calls.
package routing_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/switchboard-rpc/switchboard/client"
	"github.com/switchboard-rpc/switchboard/integration/internal/hubproc"
	"github.com/switchboard-rpc/switchboard/integration/internal/netcut"
	"github.com/switchboard-rpc/switchboard/integration/internal/testclient"
	"github.com/switchboard-rpc/switchboard/peer"
)

// provide makes c provide method with h.
func provide(t *testing.T, c *client.Client, method string, h peer.Handler) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := c.Provide(ctx, method, h); err != nil {
		t.Fatalf("provide %s: %v", method, err)
	}
}

func add(_ context.Context, xs []float64) (float64, error) {
	var sum float64
	for _, x := range xs {
		sum += x
	}
	return sum, nil
}

// A Go service's methods answer a Go caller, the rpc command (over
// WebSocket and over HTTP POST) and a raw WebSocket caller, all through
// the hub.
func TestCallersOfAGoService(t *testing.T) {
	h := hubproc.StartDemo(t)
	svc, _ := testclient.Dial(t, h.WebSocketURL(), nil)
	provide(t, svc, "svc.add", peer.Func(add))
	provide(t, svc, "svc.upper.*", peer.Func(func(ctx context.Context, s []string) (string, error) {
		return strings.ToUpper(s[0]), nil
	}))
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	caller, _ := testclient.Dial(t, h.WebSocketURL(), nil)
	var sum float64
	if err := caller.Call(ctx, "svc.add", []float64{1, 2, 3.5}, &sum); err != nil || sum != 6.5 {
		t.Fatalf("Go caller: %v, %v", sum, err)
	}

	bin := rpcCommand(t)
	for _, url := range []string{h.WebSocketURL(), h.URL() + "/rpc"} {
		var stdout, stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, bin, "call", url, "svc.add", "40", "2")
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil || stdout.String() != "42\n" {
			t.Fatalf("rpc call %s: %v: stdout %q, stderr %q", url, err, stdout.String(), stderr.String())
		}
		stdout.Reset()
		cmd = exec.CommandContext(ctx, bin, "call", url, "svc.upper.x", "hub")
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil || stdout.String() != "\"HUB\"\n" {
			t.Fatalf("rpc call %s svc.upper.x: %v: stdout %q, stderr %q", url, err, stdout.String(), stderr.String())
		}
	}

	ws := testclient.DialWS(t, h.WebSocketURL())
	testclient.Send(t, ws, `{"jsonrpc":"2.0","method":"svc.add","params":[2,3],"id":"w1"}`)
	if got := testclient.Receive(t, ws, 30*time.Second); got != `{"jsonrpc":"2.0","id":"w1","result":5}` {
		t.Fatalf("raw caller got %s", got)
	}
	testclient.Send(t, ws, `{"jsonrpc":"2.0","method":"svc.nothing","id":2}`)
	if m := decode(t, testclient.Receive(t, ws, 30*time.Second)); m.Error == nil || m.Error.Code != -32601 {
		t.Fatalf("a method nobody provides: %+v", m)
	}
}

// Two providers of a method share its calls: twenty calls in flight at
// once go ten to each.
func TestProvidersShareTheLoad(t *testing.T) {
	h := hubproc.StartDemo(t)
	arrived := make(chan string, 100)
	release := make(chan struct{})
	for _, name := range []string{"p1", "p2"} {
		p, _ := testclient.Dial(t, h.WebSocketURL(), nil)
		provide(t, p, "svc.work", peer.Func(func(ctx context.Context, _ []int) (string, error) {
			arrived <- name
			select {
			case <-release:
				return name, nil
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}))
	}
	caller, _ := testclient.Dial(t, h.WebSocketURL(), nil)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	const calls = 20
	results := make(chan string, calls)
	var wg sync.WaitGroup
	for range calls {
		wg.Go(func() {
			var who string
			if err := caller.Call(ctx, "svc.work", []int{}, &who); err != nil {
				t.Errorf("call: %v", err)
			}
			results <- who
		})
	}
	count := map[string]int{}
	for range calls {
		select {
		case who := <-arrived:
			count[who]++
		case <-ctx.Done():
			close(release)
			wg.Wait()
			t.Fatalf("only %v of the %d calls reached a provider", count, calls)
		}
	}
	close(release)
	wg.Wait()
	close(results)
	answered := map[string]int{}
	for who := range results {
		answered[who]++
	}
	if count["p1"] != calls/2 || count["p2"] != calls/2 {
		t.Errorf("calls per provider %v; want %d each", count, calls/2)
	}
	if answered["p1"] != count["p1"] || answered["p2"] != count["p2"] {
		t.Errorf("answers per provider %v; calls %v", answered, count)
	}
}

// longRunning provides svc.long: it sends progress, then waits to be
// cancelled, and reports each cancellation.
func longRunning(t *testing.T, c *client.Client) (started, cancelled <-chan struct{}) {
	t.Helper()
	s := make(chan struct{}, 10)
	x := make(chan struct{}, 10)
	provide(t, c, "svc.long", peer.Func(func(ctx context.Context, _ []int) (int, error) {
		if err := peer.Progress(ctx, "step 1"); err != nil {
			return 0, err
		}
		s <- struct{}{}
		select {
		case <-ctx.Done():
			x <- struct{}{}
			return 0, ctx.Err()
		case <-time.After(time.Minute):
			return 0, errors.New("not cancelled within a minute")
		}
	}))
	return s, x
}

func wait(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: not within 30s", what)
	}
}

// Progress passes from provider to caller, and cancellation from caller
// to provider: with the Go client (its context cancelled) and with raw
// frames (an explicit rpc.cancel, answered -32002).
func TestCancelAndProgressPassThrough(t *testing.T) {
	h := hubproc.StartDemo(t)
	svc, _ := testclient.Dial(t, h.WebSocketURL(), nil)
	started, cancelled := longRunning(t, svc)

	caller, _ := testclient.Dial(t, h.WebSocketURL(), nil)
	progress := make(chan string, 10)
	ctx, cancel := context.WithCancel(peer.WithProgress(t.Context(), func(data json.RawMessage) {
		progress <- string(data)
	}))
	defer cancel()
	callErr := make(chan error, 1)
	go func() { callErr <- caller.Call(ctx, "svc.long", []int{}, nil) }()
	select {
	case p := <-progress:
		if p != `"step 1"` {
			cancel()
			<-callErr
			t.Fatalf("progress %s", p)
		}
	case <-time.After(30 * time.Second):
		cancel()
		<-callErr
		t.Fatal("no progress within 30s")
	}
	wait(t, started, "the provider's handler started")
	cancel()
	if err := <-callErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
	wait(t, cancelled, "the provider's handler cancelled (Go caller)")

	ws := testclient.DialWS(t, h.WebSocketURL())
	testclient.Send(t, ws, `{"jsonrpc":"2.0","method":"svc.long","params":[],"id":7}`)
	if got := testclient.Receive(t, ws, 30*time.Second); got != `{"jsonrpc":"2.0","method":"rpc.progress","params":{"id":7,"data":"step 1"}}` {
		t.Fatalf("raw caller: progress %s", got)
	}
	wait(t, started, "the provider's handler started")
	testclient.Send(t, ws, `{"jsonrpc":"2.0","method":"rpc.cancel","params":{"id":7}}`)
	wait(t, cancelled, "the provider's handler cancelled (rpc.cancel)")
	m := decode(t, testclient.Receive(t, ws, 30*time.Second))
	if string(m.ID) != "7" || m.Error == nil || m.Error.Code != -32002 {
		t.Fatalf("cancelled call answered %+v; want -32002", m)
	}
}

// A provider process killed (SIGKILL) in the middle of three calls leaves
// each caller, raw or the rpc command, with -32006 at once; nothing
// hangs, and the hub forgets it.
func TestProviderKilledMidCall(t *testing.T) {
	h := hubproc.StartDemo(t)
	bin := rpcCommand(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	prov := exec.Command(bin, "provide", h.WebSocketURL(), "slow.job=sleep 30")
	prov.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // the shell and its sleep die with it
	stderr, err := prov.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := prov.Start(); err != nil {
		t.Fatal(err)
	}
	kill := func() { _ = syscall.Kill(-prov.Process.Pid, syscall.SIGKILL) }
	providing := make(chan struct{})
	var out strings.Builder
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			out.WriteString(sc.Text() + "\n")
			if sc.Text() == "rpc: providing slow.job" {
				close(providing)
			}
		}
	}()
	defer func() {
		kill()
		<-scanned
		_ = prov.Wait()
		if t.Failed() {
			t.Logf("rpc provide:\n%s", out.String())
		}
	}()
	select {
	case <-providing:
	case <-time.After(30 * time.Second):
		t.Fatal("rpc provide did not say it provides slow.job within 30s")
	}

	raw := []*websocket.Conn{testclient.DialWS(t, h.WebSocketURL()), testclient.DialWS(t, h.WebSocketURL())}
	for i, c := range raw {
		testclient.Send(t, c, fmt.Sprintf(`{"jsonrpc":"2.0","method":"slow.job","params":[%d],"id":%d}`, i, i))
	}
	var cliOut, cliErr bytes.Buffer
	cli := exec.CommandContext(ctx, bin, "call", h.WebSocketURL(), "slow.job")
	cli.Stdout, cli.Stderr = &cliOut, &cliErr
	if err := cli.Start(); err != nil {
		t.Fatal(err)
	}
	cliDone := make(chan error, 1)
	cliExited := make(chan struct{})
	go func() {
		defer close(cliExited)
		cliDone <- cli.Wait()
	}()
	defer func() {
		_ = cli.Process.Kill()
		<-cliExited
	}()
	h.WaitMetrics("3 forwards in flight", func(m map[string]float64) bool {
		return m["switchboard_forwards_in_flight"] == 3
	})

	kill()
	for i, c := range raw {
		m := decode(t, testclient.Receive(t, c, 30*time.Second))
		if string(m.ID) != fmt.Sprint(i) || m.Error == nil || m.Error.Code != -32006 {
			t.Errorf("raw caller %d: %+v; want -32006", i, m)
		}
	}
	select {
	case err := <-cliDone:
		if err == nil || !strings.Contains(cliErr.String(), "-32006") {
			t.Errorf("rpc call: %v, stdout %q, stderr %q; want -32006", err, cliOut.String(), cliErr.String())
		}
	case <-time.After(30 * time.Second):
		t.Error("rpc call still waiting 30s after its provider was killed")
	}
	m := h.WaitMetrics("forgetting the provider", func(m map[string]float64) bool {
		return m["switchboard_providers"] == 0 && m["switchboard_forwards_in_flight"] == 0
	})
	if m["switchboard_provider_lost_total"] != 3 {
		t.Errorf("switchboard_provider_lost_total %v; want 3", m["switchboard_provider_lost_total"])
	}
}

// A caller whose connection is cut in the middle of a call (no close
// frame) has the call cancelled at its provider.
func TestCallerCutMidCall(t *testing.T) {
	h := hubproc.StartDemo(t)
	svc, _ := testclient.Dial(t, h.WebSocketURL(), nil)
	started, cancelled := longRunning(t, svc)
	p := netcut.Start(t, h.Addr())
	ws := testclient.DialWS(t, testclient.URL(p.Addr()))
	testclient.Send(t, ws, `{"jsonrpc":"2.0","method":"svc.long","params":[],"id":1}`)
	wait(t, started, "the provider's handler started")
	p.Cut()
	wait(t, cancelled, "the provider's handler cancelled after its caller was cut")
	h.WaitMetrics("no forwards in flight", func(m map[string]float64) bool {
		return m["switchboard_forwards_in_flight"] == 0 && m["switchboard_connections"] == 1
	})
}

// Ids come back to the caller exactly as it sent them, through the
// provider: numbers byte for byte, beyond 64 bits and in any JSON
// spelling, strings, and null.
func TestIDsForwardedExactly(t *testing.T) {
	h := hubproc.StartDemo(t)
	svc, _ := testclient.Dial(t, h.WebSocketURL(), nil)
	provide(t, svc, "svc.add", peer.Func(add))
	ws := testclient.DialWS(t, h.WebSocketURL())
	for _, id := range []string{
		`18446744073709551616`,
		`123456789012345678901234567890`,
		`-98765432109876543210987654321`,
		`1.50`, `1e400`, `-0`, `2E+3`,
		`"abc"`, `""`, `"é \"quoted\" \u00e9 \ud83d\ude00"`,
		`null`,
	} {
		testclient.Send(t, ws, `{"jsonrpc":"2.0","method":"svc.add","params":[1,1],"id":`+id+`}`)
		got := testclient.Receive(t, ws, 30*time.Second)
		if want := `{"jsonrpc":"2.0","id":` + id + `,"result":2}`; got != want {
			// A string may come back re-escaped; what it says must not change.
			m := decode(t, got)
			var a, b any
			if id[0] != '"' || json.Unmarshal(m.ID, &a) != nil || json.Unmarshal([]byte(id), &b) != nil || a != b || string(m.Result) != "2" {
				t.Errorf("id %s: got %s", id, got)
			}
		}
	}
}

// After 10,000 calls forwarded from eight callers at once, every answer
// is right, the counters show all of them and nothing in flight, and the
// hub's goroutines are back to the baseline once the peers leave.
func TestTenThousandForwards(t *testing.T) {
	h := hubproc.StartDemo(t)
	base := h.Baseline()
	svc, _ := testclient.Dial(t, h.WebSocketURL(), nil)
	provide(t, svc, "svc.add", peer.Func(add))
	caller, _ := testclient.Dial(t, h.WebSocketURL(), nil)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	const workers, each = 8, 1250
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				var sum float64
				if err := caller.Call(ctx, "svc.add", []float64{float64(w), float64(i)}, &sum); err != nil {
					t.Errorf("call %d/%d: %v", w, i, err)
					return
				}
				if sum != float64(w+i) {
					t.Errorf("call %d/%d: %v", w, i, sum)
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	m := h.Metrics()
	if got := m[`switchboard_forwarded_total{method="svc.add"}`]; got != workers*each {
		t.Errorf("switchboard_forwarded_total for svc.add %v; want %d", got, workers*each)
	}
	if m["switchboard_forwards_in_flight"] != 0 || m["switchboard_providers"] != 1 {
		t.Errorf("forwards in flight %v, providers %v; want 0 and 1", m["switchboard_forwards_in_flight"], m["switchboard_providers"])
	}
	if err := caller.Close(); err != nil {
		t.Fatal(err)
	}
	if err := svc.Close(); err != nil {
		t.Fatal(err)
	}
	h.WaitRecovered(base, func(m map[string]float64) bool {
		return m["switchboard_providers"] == 0 && m["switchboard_forwards_in_flight"] == 0
	})
}
