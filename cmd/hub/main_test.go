package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv("HUB_TEST_RUN_MAIN") == "1" {
		os.Args = append([]string{"hub"}, strings.Fields(os.Getenv("HUB_TEST_ARGS"))...)
		main()
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// start runs the hub with args until the test ends and returns its base URL.
func start(t *testing.T, args ...string) (url string, stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"-addr", "127.0.0.1:0"}, args...), io.Discard, func(a net.Addr) { addr <- a })
	}()
	var a net.Addr
	select {
	case a = <-addr:
	case err := <-done:
		cancel()
		t.Fatalf("run: %v", err)
	case <-time.After(testkit.Wait):
		t.Fatal("hub did not start")
	}
	stopped := false
	stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		return <-done
	}
	t.Cleanup(func() { _ = stop() })
	return "http://" + a.String(), stop
}

func httpDo(t *testing.T, method, url, contentType, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestDemoHub(t *testing.T) {
	url, stop := start(t, "-demo", "-log-format", "console", "-max-message", "2048")
	if resp, body := httpDo(t, "GET", url+"/healthz", "", ""); resp.StatusCode != 200 || !strings.HasPrefix(body, "ok ") {
		t.Fatalf("healthz: %d %q", resp.StatusCode, body)
	}
	if resp, body := httpDo(t, "GET", url+"/", "", ""); resp.StatusCode != 200 || !strings.Contains(body, "<title>Switchboard playground</title>") {
		t.Fatalf("/: %d %.100q", resp.StatusCode, body)
	}
	if resp, body := httpDo(t, "GET", url+"/switchboard.js", "", ""); resp.StatusCode != 200 ||
		!strings.Contains(resp.Header.Get("Content-Type"), "javascript") || !strings.Contains(body, "export class Client") ||
		resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("/switchboard.js: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if resp, body := httpDo(t, "GET", url+"/metrics", "", ""); resp.StatusCode != 200 || !strings.Contains(body, "switchboard_connections") {
		t.Fatalf("/metrics: %d", resp.StatusCode)
	}
	if resp, body := httpDo(t, "POST", url+"/rpc", "application/json", `{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}`); resp.StatusCode != 200 || body != `{"jsonrpc":"2.0","id":1,"result":19}` {
		t.Fatalf("POST subtract: %d %s", resp.StatusCode, body)
	}
	// The root is JSON-RPC too, but for a plain GET.
	if resp, body := httpDo(t, "POST", url+"/", "application/json", `{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}`); resp.StatusCode != 200 || body != `{"jsonrpc":"2.0","id":1,"result":19}` {
		t.Fatalf("POST / subtract: %d %s", resp.StatusCode, body)
	}
	// -max-message applies.
	if resp, _ := httpDo(t, "POST", url+"/rpc", "application/json", `{"jsonrpc":"2.0","method":"echo","params":["`+strings.Repeat("x", 3000)+`"]}`); resp.StatusCode != 413 {
		t.Fatalf("POST over -max-message: %d", resp.StatusCode)
	}

	// A WebSocket peer: call, publish (any peer may in demo mode), and a
	// 1001 close when the hub stops.
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Wait)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(url, "http")+"/rpc", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	c := peer.NewConn(peer.WebSocket(ws), nil)
	served := make(chan error, 1)
	go func() { served <- c.Serve(context.Background()) }()
	var sum float64
	if err := c.Call(ctx, "add", map[string]float64{"a": 1, "b": 2}, &sum); err != nil || sum != 3 {
		t.Fatalf("add = %v, %v", sum, err)
	}
	var pub struct{ Delivered int }
	if err := c.Call(ctx, "rpc.publish", []any{"news", 1}, &pub); err != nil {
		t.Fatalf("publish in demo mode: %v", err)
	}
	if err := stop(); err != nil {
		t.Fatalf("run returned %v", err)
	}
	<-served
	err = c.Err()
	var ce *peer.CloseError
	if !errors.As(err, &ce) || ce.Code != 1001 {
		t.Fatalf("connection ended with %v, want close 1001", err)
	}
}

func TestNoDemo(t *testing.T) {
	url, _ := start(t)
	_, body := httpDo(t, "POST", url+"/rpc", "application/json", `{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}`)
	if !strings.Contains(body, "-32601") {
		t.Fatalf("add without -demo: %s", body)
	}
}

func TestTokenFile(t *testing.T) {
	file := testkit.WriteFile(t, filepath.Join(t.TempDir(), "tokens"), []byte("# tokens\n\nalpha\n  beta  \n"))
	url, _ := start(t, "-demo", "-token-file", file)
	call := `{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}`
	if resp, _ := httpDo(t, "POST", url+"/rpc", "application/json", call); resp.StatusCode != 401 {
		t.Fatalf("no token: %d", resp.StatusCode)
	}
	if status, _ := testkit.Post(t, t.Context(), url+"/rpc", "beta", call); status != 200 {
		t.Fatalf("good token: %d", status)
	}
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Wait)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(url, "http")+"/rpc?token=alpha", nil)
	if err != nil {
		t.Fatalf("dial with ?token=: %v", err)
	}
	ws.Close(websocket.StatusNormalClosure, "")
}

// TestBodyTimeout: -body-timeout bounds how long a POST body may take.
func TestBodyTimeout(t *testing.T) {
	url, _ := start(t, "-demo", "-body-timeout", "50ms")
	addr := strings.TrimPrefix(url, "http://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(testkit.Wait)); err != nil {
		t.Fatal(err)
	}
	// The headers and part of the body, and then nothing.
	if _, err := io.WriteString(c, "POST /rpc HTTP/1.1\r\nHost: "+addr+"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\""); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer to a stalled body: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("stalled body: %d, want 408", resp.StatusCode)
	}
}

func TestBadFlags(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty")
	_ = os.WriteFile(empty, []byte("\n# none\n"), 0o600)
	for _, args := range [][]string{
		{"-log-format", "xml"},
		{"-log-level", "loud"},
		{"-nope"},
		{"extra"},
		{"-token-file", filepath.Join(t.TempDir(), "missing")},
		{"-token-file", empty},
		{"-addr", "127.0.0.1:-1"},
	} {
		if err := run(t.Context(), args, io.Discard, nil); err == nil {
			t.Errorf("run %q: no error", args)
		}
	}
	if err := run(t.Context(), []string{"-h"}, io.Discard, nil); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v", err)
	}
}

// TestSignal runs the command in a child process and stops it with
// SIGTERM: it closes a connected WebSocket with 1001 and exits 0.
func TestSignal(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "HUB_TEST_RUN_MAIN=1", "HUB_TEST_ARGS=-addr 127.0.0.1:0 -demo")
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill() //nolint:errcheck
			lines := bufio.NewScanner(stderr)
			addrRE := regexp.MustCompile(`"addr":"([^"]+)"`)
			var addr string
			for addr == "" && lines.Scan() {
				var entry struct{ Msg, Addr string }
				if json.Unmarshal(lines.Bytes(), &entry) == nil && entry.Msg == "hub listening" {
					addr = entry.Addr
				} else if m := addrRE.FindSubmatch(lines.Bytes()); m != nil {
					addr = string(m[1])
				}
			}
			if addr == "" {
				t.Fatal("no \"hub listening\" line")
			}
			go func() { _, _ = io.Copy(io.Discard, stderr) }()

			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			ws, _, err := websocket.Dial(ctx, "ws://"+addr+"/rpc", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ws.CloseNow()
			if err := ws.Write(ctx, websocket.MessageText, []byte(`{"jsonrpc":"2.0","method":"rpc.ping","id":1}`)); err != nil {
				t.Fatal(err)
			}
			if _, _, err := ws.Read(ctx); err != nil {
				t.Fatal(err)
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			_, _, err = ws.Read(ctx)
			if status := websocket.CloseStatus(err); status != websocket.StatusGoingAway {
				t.Fatalf("after %v: %v, want close 1001", sig, err)
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("exit: %v, want 0", err)
			}
		})
	}
}

// TestHistoryFlags: -history bounds what rpc.history returns; 0 keeps
// nothing.
func TestHistoryFlags(t *testing.T) {
	for _, tt := range []struct {
		flag string
		want int
	}{{"-history=2", 2}, {"-history=0", 0}, {"-history-age=1h", 3}} {
		t.Run(tt.flag, func(t *testing.T) {
			url, _ := start(t, "-demo", tt.flag)
			for i := range 3 {
				resp, _ := httpDo(t, "POST", url+"/rpc", "application/json",
					fmt.Sprintf(`{"jsonrpc":"2.0","method":"rpc.publish","params":["h",%d],"id":1}`, i))
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("publish: %s", resp.Status)
				}
			}
			_, body := httpDo(t, "POST", url+"/rpc", "application/json",
				`{"jsonrpc":"2.0","method":"rpc.history","params":{"topic":"h"},"id":2}`)
			var res struct {
				Result struct{ Events []json.RawMessage }
			}
			if err := json.Unmarshal([]byte(body), &res); err != nil || len(res.Result.Events) != tt.want {
				t.Fatalf("history %s: want %d events", body, tt.want)
			}
		})
	}
}
