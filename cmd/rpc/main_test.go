package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/client"
	"github.com/switchboard-rpc/switchboard/internal/hubtest"
	"github.com/switchboard-rpc/switchboard/peer"
	"github.com/switchboard-rpc/switchboard/server"
	"go.uber.org/goleak"
)

// bin is the rpc binary under test, built once by TestMain.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "rpc-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "rpc")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// wait bounds every wait in these tests.
const wait = 20 * time.Second

type result struct {
	stdout, stderr string
	code           int
}

// rpc runs the binary to completion.
func rpc(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	return rpcEnv(t, nil, stdin, args...)
}

// rpcEnv runs the binary to completion with env added to the
// environment, where RPC_TOKEN and RPC_CA are unset.
func rpcEnv(t *testing.T, env []string, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(append(os.Environ(), "RPC_TOKEN=", "RPC_CA="), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("rpc %v: %v", args, err)
	}
	return r
}

func (r result) check(t *testing.T, code int, stdout string) {
	t.Helper()
	if r.code != code || r.stdout != stdout {
		t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d, stdout %q", r.code, r.stdout, r.stderr, code, stdout)
	}
}

// published is what publish prints: the peers reached and the position
// the event got in the stream of h.
func published(h *hubtest.Hub, delivered int, seq uint64) string {
	return fmt.Sprintf(`{"delivered":%d,"seq":%d,"epoch":%q}`+"\n", delivered, seq, h.Hub().Position().Epoch)
}

func TestCall(t *testing.T) {
	h := hubtest.Start(t, nil)
	for _, url := range []string{h.HTTP(), h.WS()} {
		t.Run(url[:strings.Index(url, ":")], func(t *testing.T) {
			rpc(t, "", "call", url, "add", "1", "2").check(t, 0, "3\n")
			rpc(t, "", "call", url, "subtract", `{"minuend": 42, "subtrahend": 23}`).check(t, 0, "19\n")
			rpc(t, "", "call", url, "subtract", "42", "23").check(t, 0, "19\n")
			rpc(t, "", "call", url, "echo", "hello", "42", "true", "null", `"7"`, "a b").
				check(t, 0, `["hello",42,true,null,"7","a b"]`+"\n")
			rpc(t, "", "call", url, "get_data").check(t, 0, `["hello",5]`+"\n")
			rpc(t, "", "call", "-pretty", url, "echo", `{"a": [1]}`).check(t, 0, "{\n  \"a\": [\n    1\n  ]\n}\n")
			rpc(t, ` {"minuend": 5, "subtrahend": 8} `, "call", url, "subtract", "-").check(t, 0, "-3\n")
			rpc(t, "", "call", url, "subtract", "5", "-8").check(t, 0, "13\n")
			if r := rpc(t, "5", "call", url, "echo", "-"); r.code != exitUsage {
				t.Errorf("scalar params on stdin: exit %d", r.code)
			}
		})
	}
}

func TestProgress(t *testing.T) {
	h := hubtest.Start(t, nil)
	r := rpc(t, "", "call", "-progress", h.WS(), "sleep", `{"ms": 250}`)
	r.check(t, 0, `{"slept":250}`+"\n")
	if !strings.HasPrefix(r.stderr, "progress: {\"slept\":") { // about every 100ms
		t.Errorf("stderr %q: want the progress reports", r.stderr)
	}
}

func TestCallErrors(t *testing.T) {
	h := hubtest.Start(t, nil)
	for _, url := range []string{h.HTTP(), h.WS()} {
		t.Run(url[:strings.Index(url, ":")], func(t *testing.T) {
			r := rpc(t, "", "call", url, "no_such_method")
			r.check(t, exitRPCError, "")
			if !strings.Contains(r.stderr, "error -32601: Method not found") {
				t.Errorf("stderr %q", r.stderr)
			}
			r = rpc(t, "", "call", "-timeout", "300ms", url, "sleep", `{"ms": 10000}`)
			r.check(t, exitTimeout, "")
			if !strings.Contains(r.stderr, "timed out after 300ms") {
				t.Errorf("stderr %q", r.stderr)
			}
		})
	}
	// A port with no one listening.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	for _, url := range []string{"http://" + dead + "/rpc", "ws://" + dead + "/rpc"} {
		r := rpc(t, "", "call", url, "add", "1", "2")
		r.check(t, exitConn, "")
		if !strings.Contains(r.stderr, dead) || !strings.Contains(r.stderr, "connection refused") {
			t.Errorf("stderr %q: want the address and the cause", r.stderr)
		}
	}
}

func TestUsage(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"bogus"},
		{"call"},
		{"call", "ftp://x/rpc", "m"},
		{"call", "-nosuchflag", "http://x/rpc", "m"},
		{"subscribe", "http://127.0.0.1:1/rpc", "news"},
		{"serve", "ws://127.0.0.1:1/rpc", "noequals"},
		{"publish", "http://127.0.0.1:1/rpc", "topic"},
	} {
		r := rpc(t, "", args...)
		if r.code != exitUsage || r.stderr == "" {
			t.Errorf("rpc %q: exit %d, stderr %q; want exit 2 and an explanation", args, r.code, r.stderr)
		}
	}
	for _, c := range commands {
		r := rpc(t, "", c.name, "-h")
		if r.code != 0 || !strings.Contains(r.stderr, "Usage: rpc "+c.name) || !strings.Contains(r.stderr, "Examples:") {
			t.Errorf("rpc %s -h: exit %d, stderr %q", c.name, r.code, r.stderr)
		}
	}
	r := rpc(t, "", "help")
	if r.code != 0 || !strings.Contains(r.stdout, "subscribe") {
		t.Errorf("rpc help: exit %d, stdout %q", r.code, r.stdout)
	}
	r = rpc(t, "", "help", "batch")
	if r.code != 0 || !strings.Contains(r.stdout, "Usage: rpc batch") {
		t.Errorf("rpc help batch: exit %d, stdout %q", r.code, r.stdout)
	}
}

func TestNotifyAndBatch(t *testing.T) {
	h := hubtest.Start(t, nil)
	for _, url := range []string{h.HTTP(), h.WS()} {
		t.Run(url[:strings.Index(url, ":")], func(t *testing.T) {
			rpc(t, "", "notify", url, "notify_hello", "7").check(t, 0, "")
			rpc(t, "", "notify", url, "no_such_method").check(t, 0, "") // notifications get no errors

			in := `[{"jsonrpc":"2.0","method":"sum","params":[1,2,4],"id":"1"},
				{"method":"notify_hello","params":[7]},
				{"method":"subtract","params":[42,23],"id":2},
				{"method":"get_data","id":null}]`
			rpc(t, in, "batch", url).check(t, 0,
				`[{"jsonrpc":"2.0","id":"1","result":7},{"jsonrpc":"2.0","id":2,"result":19},{"jsonrpc":"2.0","id":null,"result":["hello",5]}]`+"\n")

			r := rpc(t, `[{"method":"add","params":[1,2],"id":1},{"method":"foo.get","id":"5"}]`, "batch", url)
			r.check(t, exitRPCError,
				`[{"jsonrpc":"2.0","id":1,"result":3},{"jsonrpc":"2.0","id":"5","error":{"code":-32601,"message":"Method not found"}}]`+"\n")
			if !strings.Contains(r.stderr, "1 of 2 calls failed") {
				t.Errorf("stderr %q", r.stderr)
			}
			if r := rpc(t, `{"not": "an array"}`, "batch", url); r.code != exitUsage {
				t.Errorf("batch of an object: exit %d", r.code)
			}
		})
	}
}

// start runs the binary in the background and returns its stderr lines.
func start(t *testing.T, args ...string) (*exec.Cmd, *bytes.Buffer, <-chan string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		s := bufio.NewScanner(pipe)
		for s.Scan() {
			lines <- s.Text()
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		for range lines { // the reader ends with the process
		}
		_ = cmd.Wait()
	})
	return cmd, &stdout, lines
}

// waitLine waits for a stderr line containing s.
func waitLine(t *testing.T, lines <-chan string, s string) {
	t.Helper()
	deadline := time.After(wait)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("process ended before printing %q", s)
			}
			if strings.Contains(l, s) {
				return
			}
		case <-deadline:
			t.Fatalf("timed out waiting for %q", s)
		}
	}
}

// exited waits for cmd to end and returns its exit status.
func exited(t *testing.T, cmd *exec.Cmd, lines <-chan string) int {
	t.Helper()
	deadline := time.After(wait)
	for open := true; open; {
		select {
		case _, open = <-lines:
		case <-deadline:
			t.Fatal("timed out waiting for the process to exit")
		}
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0
}

func TestSubscribePublish(t *testing.T) {
	h := hubtest.Start(t, nil)
	cmd, stdout, lines := start(t, "subscribe", "-n", "3", h.WS(), "news.>", "chat.*")
	epoch := h.Hub().Position().Epoch
	waitLine(t, lines, "subscribed to news.>, chat.* at "+epoch+":0")

	rpc(t, "", "publish", h.HTTP(), "news.sport", `{"score": [2, 1]}`).check(t, 0, published(h, 1, 1))
	rpc(t, "", "publish", h.WS(), "other", "nobody").check(t, 0, published(h, 0, 2))
	rpc(t, "", "publish", h.WS(), "chat.room1", "hello world").check(t, 0, published(h, 1, 3))
	rpc(t, "null", "publish", h.HTTP(), "news.a.b", "-").check(t, 0, published(h, 1, 4))

	if code := exited(t, cmd, lines); code != 0 {
		t.Fatalf("subscribe exited %d", code)
	}
	// Each subscription delivers in order, but the two subscriptions are
	// independent, so their lines may interleave either way.
	want := []string{
		`{"topic":"chat.room1","data":"hello world","seq":3,"epoch":"` + epoch + `"}`,
		`{"topic":"news.a.b","data":null,"seq":4,"epoch":"` + epoch + `"}`,
		`{"topic":"news.sport","data":{"score":[2,1]},"seq":1,"epoch":"` + epoch + `"}`,
	}
	got := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	news := slices.DeleteFunc(slices.Clone(got), func(l string) bool { return !strings.Contains(l, `"news.`) })
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("events:\n%s\nwant (in any order):\n%s", stdout, strings.Join(want, "\n"))
	}
	if !strings.Contains(news[0], "news.sport") {
		t.Fatalf("news.> events out of order:\n%s", stdout)
	}

	// Interrupted, it exits cleanly.
	cmd, _, lines = start(t, "subscribe", h.WS(), "x")
	waitLine(t, lines, "subscribed to x")
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := exited(t, cmd, lines); code != 0 {
		t.Fatalf("interrupted subscribe exited %d", code)
	}
}

// TestSubscribeRestart restarts the hub under a running subscribe: the
// new hub has none of the old one's history, and says so.
func TestSubscribeRestart(t *testing.T) {
	h := hubtest.Start(t, nil)
	cmd, stdout, lines := start(t, "subscribe", "-n", "2", h.WS(), "news.>")
	waitLine(t, lines, "subscribed to news.>")
	rpc(t, "", "publish", h.HTTP(), "news.a", "before").check(t, 0, published(h, 1, 1))
	before := h.Hub().Position().Epoch

	h.Stop()
	waitLine(t, lines, "rpc: connection lost: closed with code 1001: going away; reconnecting")
	h.Start()
	waitLine(t, lines, "rpc: reconnected")
	rpc(t, "", "publish", h.HTTP(), "news.b", "after").check(t, 0, published(h, 1, 1))
	waitLine(t, lines, "rpc: events of news.> were missed: the hub no longer held them")
	if code := exited(t, cmd, lines); code != 0 {
		t.Fatalf("exit %d", code)
	}
	want := `{"topic":"news.a","data":"before","seq":1,"epoch":"` + before + `"}
{"topic":"news.b","data":"after","seq":1,"epoch":"` + h.Hub().Position().Epoch + `"}
`
	if stdout.String() != want {
		t.Fatalf("events:\n%s\nwant:\n%s", stdout, want)
	}
}

// TestHistoryAndSince reads the history, and subscribes after a position.
func TestHistoryAndSince(t *testing.T) {
	h := hubtest.Start(t, nil)
	for i := 1; i <= 4; i++ {
		h.Publish(fmt.Sprint("h.", i%2), i)
	}
	epoch := h.Hub().Position().Epoch
	e := func(s string) string { return strings.ReplaceAll(s, "E", epoch) + "\n" }
	for _, url := range []string{h.HTTP(), h.WS()} {
		rpc(t, "", "history", url, "h.*").check(t, 0,
			e(`{"epoch":"E","seq":4,"events":[{"topic":"h.1","data":1,"seq":1},{"topic":"h.0","data":2,"seq":2},{"topic":"h.1","data":3,"seq":3},{"topic":"h.0","data":4,"seq":4}]}`))
	}
	rpc(t, "", "history", "-limit", "1", h.HTTP(), "h.1").check(t, 0, e(`{"epoch":"E","seq":4,"events":[{"topic":"h.1","data":3,"seq":3}]}`))
	rpc(t, "", "history", "-since", epoch+":3", h.HTTP(), "h.*").check(t, 0, e(`{"epoch":"E","seq":4,"events":[{"topic":"h.0","data":4,"seq":4}]}`))
	if r := rpc(t, "", "history", "-since", "nocolon", h.HTTP(), "h.*"); r.code != exitUsage {
		t.Fatalf("bad -since: %+v", r)
	}
	if r := rpc(t, "", "history", h.HTTP(), "bad..topic"); r.code != exitRPCError || !strings.Contains(r.stderr, "-32602") {
		t.Fatalf("bad topic: %+v", r)
	}

	cmd, stdout, lines := start(t, "subscribe", "-n", "2", "-since", epoch+":2", h.WS(), "h.*")
	waitLine(t, lines, "subscribed to h.*, after "+epoch+":2")
	if code := exited(t, cmd, lines); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if want := e(`{"topic":"h.1","data":3,"seq":3,"epoch":"E"}`) + e(`{"topic":"h.0","data":4,"seq":4,"epoch":"E"}`); stdout.String() != want {
		t.Fatalf("events:\n%s\nwant:\n%s", stdout, want)
	}
}

// TestPresence lists the peers of a topic, and prints them coming and
// going.
func TestPresence(t *testing.T) {
	h := hubtest.Start(t, nil)
	rpc(t, "", "presence", h.HTTP(), "room.1").check(t, 0, `{"peers":[]}`+"\n")
	cmd, stdout, lines := start(t, "subscribe", "-presence", "-n", "1", h.WS(), "room.1")
	waitLine(t, lines, "subscribed to room.1")
	watcher := h.Hub().Peers()[0].ID()
	rpc(t, "", "presence", h.WS(), "room.1").check(t, 0, `{"peers":[{"id":"`+watcher+`"}]}`+"\n")

	// Another peer comes, and goes.
	other, err := client.Dial(t.Context(), h.WS(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.Call(t.Context(), "rpc.subscribe", []string{"room.*"}, nil); err != nil {
		t.Fatal(err)
	}
	id := ""
	for _, p := range h.Hub().Peers() {
		if p.ID() != watcher {
			id = p.ID()
		}
	}
	if err := other.Call(t.Context(), "rpc.unsubscribe", []string{"room.*"}, nil); err != nil {
		t.Fatal(err)
	}
	h.Publish("room.1", "bye")
	if code := exited(t, cmd, lines); code != 0 {
		t.Fatalf("exit %d", code)
	}
	want := `{"presence":"join","topic":"room.1","peer":{"id":"` + id + `"}}
{"presence":"leave","topic":"room.1","peer":{"id":"` + id + `"}}
{"topic":"room.1","data":"bye","seq":1,"epoch":"` + h.Hub().Position().Epoch + `"}
`
	if stdout.String() != want {
		t.Fatalf("output:\n%s\nwant:\n%s", stdout, want)
	}
}

func TestDiscover(t *testing.T) {
	h := hubtest.Start(t, nil)
	r := rpc(t, "", "discover", h.HTTP())
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"methods\n", "\nadd(a number, b number) -> number\n", "\nsum(params ...number) -> number\n", "\necho(params? any) -> any\n", "\nsleep(ms integer) -> {slept: integer}\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("discover output lacks %q:\n%s", want, r.stdout)
		}
	}
	r = rpc(t, "", "discover", "-json", h.WS())
	var doc struct {
		OpenRPC string `json:"openrpc"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &doc) != nil || doc.OpenRPC == "" {
		t.Fatalf("discover -json: exit %d, %q", r.code, r.stdout)
	}
}

// onlyPeer returns the connection of h's one peer, the rpc serve under
// test.
func onlyPeer(t *testing.T, h *hubtest.Hub) *peer.Conn {
	t.Helper()
	peers := h.Hub().Peers()
	if len(peers) != 1 {
		t.Fatalf("%d peers", len(peers))
	}
	return peers[0].Conn()
}

func TestServe(t *testing.T) {
	h := hubtest.Start(t, nil)
	_, _, lines := start(t, "serve", h.WS(), "upper=tr a-z A-Z", "fail=echo it broke >&2; exit 3", "method=echo $RPC_METHOD")
	waitLine(t, lines, "serving upper, fail, method")

	served := onlyPeer(t, h)
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	var got json.RawMessage
	if err := served.Call(ctx, "upper", []string{"abc"}, &got); err != nil || string(got) != `["ABC"]` {
		t.Fatalf("upper: %s, %v", got, err)
	}
	if err := served.Call(ctx, "method", nil, &got); err != nil || string(got) != `"method"` {
		t.Fatalf("method: %s, %v", got, err)
	}
	err := served.Call(ctx, "fail", nil, nil)
	var perr *peer.Error
	if !errors.As(err, &perr) || perr.Code != peer.CodeApplication || perr.Message != "it broke" {
		t.Fatalf("fail: %v", err)
	}
}

// TestCallServe has the hub call back the rpc call process itself.
func TestCallServe(t *testing.T) {
	h := hubtest.Start(t, nil)
	rpc(t, "", "call", "-serve", "upper=tr a-z A-Z", h.WS(), "callback", `{"method": "upper", "params": ["hi"]}`).
		check(t, 0, `["HI"]`+"\n")
	r := rpc(t, "", "call", "-serve", "fail=echo disk full >&2; exit 1", h.WS(), "callback", `{"method": "fail"}`)
	r.check(t, exitRPCError, "")
	if r.stderr != "rpc: error -32000: disk full\n" {
		t.Errorf("stderr %q", r.stderr)
	}
	if r := rpc(t, "", "call", "-serve", "x=true", h.HTTP(), "add", "1", "2"); r.code != exitUsage {
		t.Errorf("-serve over POST: exit %d", r.code)
	}
}

func TestToken(t *testing.T) {
	h := hubtest.Start(t, &hubtest.Options{
		Server: server.Options{Authenticate: server.TokenAuth(map[string]string{"s3cret": "alice"})},
	})
	r := rpc(t, "", "call", h.HTTP(), "add", "1", "2")
	r.check(t, exitRPCError, "")
	if !strings.Contains(r.stderr, "-32001") {
		t.Errorf("POST without a token: stderr %q", r.stderr)
	}
	r = rpc(t, "", "call", h.WS(), "add", "1", "2")
	r.check(t, exitRPCError, "")
	if !strings.Contains(r.stderr, "-32001") || !strings.Contains(r.stderr, "401") {
		t.Errorf("WebSocket without a token: stderr %q", r.stderr)
	}
	rpc(t, "", "call", "-token", "s3cret", h.WS(), "add", "1", "2").check(t, 0, "3\n")
	rpc(t, "", "call", "-H", "Authorization: Bearer s3cret", h.HTTP(), "add", "1", "2").check(t, 0, "3\n")
}
