package routing_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/switchboard-rpc/switchboard/client"
	"github.com/switchboard-rpc/switchboard/integration/internal/hubproc"
	"github.com/switchboard-rpc/switchboard/integration/internal/testclient"
	"github.com/switchboard-rpc/switchboard/peer"
)

// These tests call chosen peers (rpc.call, docs/protocol.md, "Calling one particular peer") through
// a real hub process: a Go client, the rpc command, raw WebSockets and
// raw HTTP POSTs are the callers; Go clients the targets.

// target is a peer that answers addressed calls: confirm, and long, which
// reports progress and waits to be cancelled.
type target struct {
	c                  *client.Client
	id                 string
	started, cancelled chan struct{}
}

func dialTarget(t *testing.T, url, name string, opts *client.Options) *target {
	t.Helper()
	tg := &target{started: make(chan struct{}, 10), cancelled: make(chan struct{}, 10)}
	mux := peer.NewMux()
	mux.Handle("confirm", peer.Func(func(_ context.Context, p struct{ Amount int }) (string, error) {
		if p.Amount < 0 {
			return "", (&peer.Error{Code: 4001, Message: "refused by " + name}).WithData(map[string]int{"amount": p.Amount})
		}
		return fmt.Sprintf("%s confirms %d", name, p.Amount), nil
	}))
	mux.HandleFunc("long", func(ctx context.Context, _ *peer.Request) (any, error) {
		if err := peer.Progress(ctx, "step 1"); err != nil {
			return nil, err
		}
		tg.started <- struct{}{}
		select {
		case <-ctx.Done():
			tg.cancelled <- struct{}{}
			return nil, ctx.Err()
		case <-time.After(time.Minute):
			return nil, errors.New("not cancelled within a minute")
		}
	})
	o := client.Options{Router: mux, MinBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond}
	if opts != nil {
		o.Token = opts.Token
	}
	tg.c, _ = testclient.Dial(t, url, &o)
	me, err := tg.c.WhoAmI(t.Context())
	if err != nil || me.ID == "" {
		t.Fatalf("whoami: %+v, %v", me, err)
	}
	tg.id = me.ID
	return tg
}

// Every caller reaches a peer by its id: the Go client, the rpc command
// over WebSocket and POST, raw POSTs whose ids come back exactly; errors
// pass unchanged; no such peer is -32007; nothing is left in flight.
func TestCallAPeerByID(t *testing.T) {
	h := hubproc.StartDemo(t)
	base := h.Baseline()
	tg := dialTarget(t, h.WebSocketURL(), "tab", nil)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	caller, _ := testclient.Dial(t, h.WebSocketURL(), nil)
	var answer string
	if err := caller.CallPeer(ctx, tg.id, "confirm", map[string]int{"amount": 5}, &answer); err != nil || answer != "tab confirms 5" {
		t.Fatalf("Go caller: %q, %v", answer, err)
	}
	err := caller.CallPeer(ctx, tg.id, "confirm", map[string]int{"amount": -1}, nil)
	if e, ok := errors.AsType[*peer.Error](err); !ok || e.Code != 4001 || e.Message != "refused by tab" || string(e.Data) != `{"amount":-1}` {
		t.Fatalf("the target's error: %v", err)
	}
	err = caller.CallPeer(ctx, "no-such-peer", "confirm", nil, nil)
	if e, ok := errors.AsType[*peer.Error](err); !ok || e.Code != peer.CodeNoSuchPeer {
		t.Fatalf("no such peer: %v", err)
	}

	bin := rpcCommand(t)
	for _, url := range []string{h.WebSocketURL(), h.URL() + "/rpc"} {
		var stdout, stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, bin, "call", "-peer", tg.id, url, "confirm", `{"amount": 7}`)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil || stdout.String() != "\"tab confirms 7\"\n" {
			t.Fatalf("rpc call -peer %s: %v: stdout %q, stderr %q", url, err, stdout.String(), stderr.String())
		}
	}

	for _, id := range []string{`123456789012345678901234567890123`, `-1.5e+300`, `"\ud83d\ude00 \"quoted\""`, `null`, `0`} {
		got := testclient.Post(t, ctx, h.URL(), "", `{"jsonrpc":"2.0","method":"rpc.call","params":{"peer":"`+tg.id+`","method":"confirm","params":{"amount":1}},"id":`+id+`}`)
		if want := `{"jsonrpc":"2.0","id":` + id + `,"result":"tab confirms 1"}`; got != want {
			t.Fatalf("POST:\ngot  %s\nwant %s", got, want)
		}
	}
	m := h.WaitMetrics("no addressed call in flight", func(m map[string]float64) bool {
		return m["switchboard_forwards_in_flight"] == 0
	})
	if m["switchboard_addressed_total"] != 9 {
		t.Errorf("switchboard_addressed_total %v; want 9", m["switchboard_addressed_total"])
	}
	caller.Close()
	tg.c.Close()
	h.WaitMetrics("back to its goroutines before", func(m map[string]float64) bool {
		return m["switchboard_connections"] == 0 && m["go_goroutines"] <= base.Goroutines+2
	})
}

// Progress passes from target to caller and cancellation from caller to
// target: with raw frames (rpc.cancel, answered by the target), with an
// HTTP request abandoned, and with the call's timeout (-32003). A target
// that goes away mid-call: -32006.
func TestCallAPeerCancelTimeoutLost(t *testing.T) {
	h := hubproc.StartDemo(t)
	tg := dialTarget(t, h.WebSocketURL(), "tab", nil)

	ws := testclient.DialWS(t, h.WebSocketURL())
	testclient.Send(t, ws, `{"jsonrpc":"2.0","method":"rpc.call","params":{"peer":"`+tg.id+`","method":"long"},"id":"job 1"}`)
	if got := testclient.Receive(t, ws, 30*time.Second); got != `{"jsonrpc":"2.0","method":"rpc.progress","params":{"id":"job 1","data":"step 1"}}` {
		t.Fatalf("progress: %s", got)
	}
	wait(t, tg.started, "the target's handler started")
	testclient.Send(t, ws, `{"jsonrpc":"2.0","method":"rpc.cancel","params":{"id":"job 1"}}`)
	wait(t, tg.cancelled, "the target's handler cancelled")
	if m := decode(t, testclient.Receive(t, ws, 30*time.Second)); string(m.ID) != `"job 1"` || m.Error == nil || m.Error.Code != -32002 {
		t.Fatalf("the cancelled call's answer: %+v", m)
	}

	// A POST whose request is abandoned.
	pctx, abandon := context.WithCancel(t.Context())
	posted := make(chan struct{})
	go func() {
		defer close(posted)
		req, _ := http.NewRequestWithContext(pctx, http.MethodPost, h.URL()+"/rpc",
			strings.NewReader(`{"jsonrpc":"2.0","method":"rpc.call","params":{"peer":"`+tg.id+`","method":"long"},"id":1}`))
		req.Header.Set("Content-Type", "application/json")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	wait(t, tg.started, "the target's handler started for the POST")
	abandon()
	<-posted
	wait(t, tg.cancelled, "the target's handler cancelled when the POST was abandoned")

	// The timeout.
	got := testclient.Post(t, t.Context(), h.URL(), "", `{"jsonrpc":"2.0","method":"rpc.call","params":{"peer":"`+tg.id+`","method":"long","timeout":100},"id":2}`)
	if m := decode(t, got); m.Error == nil || m.Error.Code != -32003 {
		t.Fatalf("a call past its timeout: %s", got)
	}
	wait(t, tg.started, "the target's handler started for the call with a timeout")
	wait(t, tg.cancelled, "the target's handler cancelled at the timeout")

	// The target goes away.
	testclient.Send(t, ws, `{"jsonrpc":"2.0","method":"rpc.call","params":{"peer":"`+tg.id+`","method":"long"},"id":3}`)
	testclient.Receive(t, ws, 30*time.Second) // its progress
	wait(t, tg.started, "the target's handler started")
	tg.c.Close()
	if m := decode(t, testclient.Receive(t, ws, 30*time.Second)); string(m.ID) != "3" || m.Error == nil || m.Error.Code != -32006 {
		t.Fatalf("the answer when the target left: %+v", m)
	}
	h.WaitMetrics("no addressed call in flight", func(m map[string]float64) bool {
		return m["switchboard_forwards_in_flight"] == 0 && m["switchboard_provider_lost_total"] == 1
	})
}

// A user's peers (authenticated with the same token) all answer one
// call, the caller's own peer left out.
func TestCallAUser(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("alice-secret\ncaller-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := hubproc.Start(t, &hubproc.Options{Args: []string{"-demo", "-log-level", "warn", "-token-file", tokens}})
	alice := []*target{
		dialTarget(t, h.WebSocketURL(), "tab1", &client.Options{Token: "alice-secret"}),
		dialTarget(t, h.WebSocketURL(), "tab2", &client.Options{Token: "alice-secret"}),
	}
	caller := dialTarget(t, h.WebSocketURL(), "caller", &client.Options{Token: "caller-secret"})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	all, err := caller.c.CallPeers(ctx, client.Address{User: "token-1"}, "confirm", map[string]int{"amount": 3})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range all.Results {
		var s string
		if err := r.Decode(&s); err != nil || r.Peer.User != "token-1" {
			t.Fatalf("entry %+v: %v", r, err)
		}
		got = append(got, r.Peer.ID+" "+s)
	}
	sort.Strings(got)
	want := []string{alice[0].id + " tab1 confirms 3", alice[1].id + " tab2 confirms 3"}
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// alice calls her own user: her other tab answers, not she.
	all, err = alice[0].c.CallPeers(ctx, client.Address{User: "token-1"}, "confirm", map[string]int{"amount": 1})
	if err != nil || len(all.Results) != 1 || all.Results[0].Peer.ID != alice[1].id {
		t.Fatalf("alice's own user: %+v, %v", all, err)
	}
}

// A topic with 1,000 subscribers, of which some answer errors and some
// never answer: one entry each, within the timeout; then nothing is in
// flight, and the hub's goroutines are back where they were. A
// notification to them all gets nothing back.
func TestCallATopicOfAThousand(t *testing.T) {
	const n = 1000
	h := hubproc.StartDemo(t)
	base := h.Baseline()
	var wg sync.WaitGroup
	conns := make([]*peer.Conn, n)
	for i := range n {
		mux := peer.NewMux()
		mux.HandleFunc("state", func(ctx context.Context, _ *peer.Request) (any, error) {
			switch i % 10 {
			case 0:
				return nil, &peer.Error{Code: 4002, Message: "busy"}
			case 1:
				<-ctx.Done() // answers only once cancelled
				return nil, ctx.Err()
			}
			return i, nil
		})
		ws := testclient.DialWS(t, h.WebSocketURL())
		c := peer.NewConn(peer.WebSocket(ws), &peer.Options{Router: mux})
		wg.Go(func() { _ = c.Serve(context.Background()) })
		conns[i] = c
		if err := c.Call(t.Context(), "rpc.subscribe", []string{"room.7"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
		wg.Wait()
	}()

	ws := testclient.DialWS(t, h.WebSocketURL())
	ws.SetReadLimit(1 << 20)
	start := time.Now()
	// The timeout leaves room for 900 answers from a hub under load.
	testclient.Send(t, ws, `{"jsonrpc":"2.0","method":"rpc.call","params":{"topic":"room.7","method":"state","timeout":10000},"id":1}`)
	var reply struct {
		Result struct {
			Results []struct {
				Peer   struct{ ID string }
				Result json.RawMessage
				Error  *peer.Error
			}
		}
	}
	if err := json.Unmarshal([]byte(testclient.Receive(t, ws, time.Minute)), &reply); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	counts := map[string]int{}
	ids := map[string]bool{}
	for _, r := range reply.Result.Results {
		ids[r.Peer.ID] = true
		switch {
		case r.Error != nil && r.Error.Code == peer.CodeTimeout:
			counts["timed out"]++
		case r.Error != nil && r.Error.Code == 4002:
			counts["errors"]++
		case r.Error == nil && len(r.Result) > 0:
			counts["results"]++
		}
	}
	if len(ids) != n || counts["timed out"] != n/10 || counts["errors"] != n/10 || counts["results"] != n*8/10 {
		t.Fatalf("%d entries of %d peers: %v", len(reply.Result.Results), len(ids), counts)
	}
	if took < 10*time.Second || took > 40*time.Second {
		t.Fatalf("answered after %v; want the 10 s timeout", took)
	}
	t.Logf("1,000 peers answered in %v", took)

	// A notification to all: nothing comes back but the next call's answer.
	testclient.Send(t, ws, `{"jsonrpc":"2.0","method":"rpc.call","params":{"topic":"room.7","method":"state"}}`)
	testclient.Send(t, ws, `{"jsonrpc":"2.0","method":"rpc.ping","id":2}`)
	if got := testclient.Receive(t, ws, 30*time.Second); got != `{"jsonrpc":"2.0","id":2,"result":{}}` {
		t.Fatalf("after a notification: %s", got)
	}
	_ = ws.Close(websocket.StatusNormalClosure, "")
	for _, c := range conns {
		c.Close()
	}
	wg.Wait()
	h.WaitMetrics("no call in flight, and its goroutines back", func(m map[string]float64) bool {
		return m["switchboard_forwards_in_flight"] == 0 && m["switchboard_connections"] == 0 && m["go_goroutines"] <= base.Goroutines+2
	})
}
