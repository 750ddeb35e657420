package server_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
	"github.com/switchboard-rpc/switchboard/server"
)

func TestPost(t *testing.T) {
	ts := newTestServer(t, nil)
	tests := []struct {
		name, in string
		status   int
		want     string // "" for no body
	}{
		{"by position", `{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}`, 200,
			`{"jsonrpc":"2.0","result":19,"id":1}`},
		{"by name", `{"jsonrpc":"2.0","method":"subtract","params":{"subtrahend":23,"minuend":42},"id":3}`, 200,
			`{"jsonrpc":"2.0","result":19,"id":3}`},
		{"notification", `{"jsonrpc":"2.0","method":"update","params":[1,2,3,4,5]}`, 204, ``},
		{"unknown method", `{"jsonrpc":"2.0","method":"foobar","id":"1"}`, 200,
			`{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"},"id":"1"}`},
		{"parse error", `{"jsonrpc":"2.0","method":"foobar,"params":"bar","baz]`, 200,
			`{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"},"id":null}`},
		{"empty batch", `[]`, 200,
			`{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request"},"id":null}`},
		{"batch", `[
			{"jsonrpc":"2.0","method":"sum","params":[1,2,4],"id":"1"},
			{"jsonrpc":"2.0","method":"notify_hello","params":[7]},
			{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":"2"},
			{"foo":"boo"},
			{"jsonrpc":"2.0","method":"foo.get","params":{"name":"myself"},"id":"5"},
			{"jsonrpc":"2.0","method":"get_data","id":"9"}]`, 200,
			`[{"jsonrpc":"2.0","result":7,"id":"1"},
			{"jsonrpc":"2.0","result":19,"id":"2"},
			{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request"},"id":null},
			{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"},"id":"5"},
			{"jsonrpc":"2.0","result":["hello",5],"id":"9"}]`},
		{"batch of notifications", `[{"jsonrpc":"2.0","method":"notify_sum","params":[1,2,4]},{"jsonrpc":"2.0","method":"notify_hello","params":[7]}]`, 204, ``},
		{"echo", `{"jsonrpc":"2.0","method":"echo","params":{"a":[1,"x",null]},"id":1}`, 200,
			`{"jsonrpc":"2.0","result":{"a":[1,"x",null]},"id":1}`},
		{"add by name", `{"jsonrpc":"2.0","method":"add","params":{"a":1,"b":2},"id":1}`, 200,
			`{"jsonrpc":"2.0","result":3,"id":1}`},
		{"callback has no peer", `{"jsonrpc":"2.0","method":"callback","params":{"method":"x"},"id":1}`, 200,
			`{"jsonrpc":"2.0","error":{"code":-32000,"message":"callback needs a WebSocket connection: over HTTP POST there is no peer to call back"},"id":1}`},
		{"subscribe has no peer", `{"jsonrpc":"2.0","method":"rpc.subscribe","params":{"topic":"news"},"id":1}`, 200,
			`{"jsonrpc":"2.0","error":{"code":-32000,"message":"rpc.subscribe needs a WebSocket connection to deliver events to"},"id":1}`},
		{"publish", `{"jsonrpc":"2.0","method":"rpc.publish","params":{"topic":"news","data":1},"id":1}`, 200,
			`{"jsonrpc":"2.0","result":{"delivered":0,"seq":1,"epoch":"EPOCH"},"id":1}`},
		{"ping", `{"jsonrpc":"2.0","method":"rpc.ping","id":1}`, 200, `{"jsonrpc":"2.0","result":{},"id":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := post(t, ts.URL, "application/json", tt.in, nil)
			if status != tt.status {
				t.Fatalf("status %d, want %d (body %s)", status, tt.status, body)
			}
			testkit.JSONEqual(t, strings.ReplaceAll(tt.want, "EPOCH", ts.srv.Hub().Position().Epoch), body)
		})
	}
}

func TestPostHTTPErrors(t *testing.T) {
	ts := newTestServer(t, &server.Options{Conn: peer.Options{MaxMessage: 1000}})
	call := `{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}`
	for _, tt := range []struct {
		name, contentType, body string
		status                  int
	}{
		{"json with charset", "application/json; charset=utf-8", call, 200},
		{"text/plain", "text/plain", call, http.StatusUnsupportedMediaType},
		{"form", "application/x-www-form-urlencoded", call, http.StatusUnsupportedMediaType},
		{"no content type", "", call, http.StatusUnsupportedMediaType},
		{"too big", "application/json", `{"jsonrpc":"2.0","method":"echo","params":["` + strings.Repeat("x", 1000) + `"],"id":1}`, http.StatusRequestEntityTooLarge},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if status, body := post(t, ts.URL, tt.contentType, tt.body, nil); status != tt.status {
				t.Fatalf("status %d, want %d (%s)", status, tt.status, body)
			}
		})
	}
	for _, method := range []string{http.MethodPut, http.MethodDelete, http.MethodPatch} {
		req, _ := http.NewRequestWithContext(t.Context(), method, ts.URL+"/rpc", strings.NewReader(call))
		req.Header.Set("Content-Type", "application/json")
		resp, _ := doRequest(t, req)
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") == "" {
			t.Errorf("%s: status %d, Allow %q; want 405 with Allow", method, resp.StatusCode, resp.Header.Get("Allow"))
		}
	}
	resp, err := http.Get(ts.URL + "/rpc")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUpgradeRequired || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET without upgrade: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}

func TestHealthAndMetrics(t *testing.T) {
	ts := newTestServer(t, nil)
	post(t, ts.URL, "application/json", `{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}`, nil)
	post(t, ts.URL, "application/json", `{"jsonrpc":"2.0","method":"nope","id":1}`, nil)
	if status, body := get(t, ts.URL+"/healthz"); status != 200 || body != "ok\n" {
		t.Fatalf("healthz: %d %q", status, body)
	}
	status, body := get(t, ts.URL+"/metrics")
	if status != 200 {
		t.Fatalf("metrics: %d", status)
	}
	for _, want := range []string{
		`switchboard_calls_total{method="add",outcome="ok"} 1`,
		`switchboard_calls_total{method="",outcome="method_not_found"} 1`,
		`switchboard_call_duration_seconds_bucket{method="add"`,
		"switchboard_connections 0",
		"switchboard_connections_total 0",
		"switchboard_published_total 0",
		"switchboard_delivered_total 0",
		"switchboard_dropped_total 0",
		"switchboard_slow_consumers_total 0",
		"switchboard_subscriptions 0",
		`switchboard_limited_total{limit="rate"} 0`,
		`switchboard_rejected_total{reason="auth"} 0`,
		"go_goroutines",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if status, _ := get(t, ts.URL+"/nope"); status != 404 {
		t.Errorf("/nope: %d", status)
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = io.Copy(&b, resp.Body)
	return resp.StatusCode, b.String()
}

// TestShutdownWaitsForPost: a POST in flight when Shutdown starts is
// answered before Shutdown returns.
func TestShutdownWaitsForPost(t *testing.T) {
	started, finished := make(chan struct{}), make(chan struct{})
	mux := peer.NewMux()
	mux.Handle("slow", peer.Func(func(ctx context.Context, _ struct{}) (string, error) {
		close(started)
		time.Sleep(200 * time.Millisecond) // work that does not watch ctx
		close(finished)
		return "done", nil
	}))
	ts := newTestServer(t, &server.Options{Router: mux})
	type result struct {
		status int
		body   string
	}
	res := make(chan result, 1)
	go func() {
		resp, err := http.Post(ts.URL+"/rpc", "application/json", strings.NewReader(`{"jsonrpc":"2.0","method":"slow","id":1}`))
		if err != nil {
			res <- result{0, err.Error()}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		res <- result{resp.StatusCode, string(b)}
	}()
	testkit.Recv(t, started, "the handler to start")
	if err := ts.srv.Shutdown(timeout(t)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-finished:
	default:
		t.Fatal("Shutdown returned while the POST's handler was running")
	}
	select {
	case r := <-res:
		if r.status != 200 || r.body != `{"jsonrpc":"2.0","id":1,"result":"done"}` {
			t.Fatalf("POST: %d %s", r.status, r.body)
		}
	case <-time.After(testkit.Wait):
		t.Fatal("no answer to the POST")
	}
}

// slowPost sends the headers of a POST and the first sent bytes of its
// body, and returns the connection, with a deadline, for the rest.
func slowPost(t *testing.T, addr, body string, sent int) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.SetDeadline(time.Now().Add(testkit.Wait)); err != nil {
		t.Fatal(err)
	}
	_, err = fmt.Fprintf(c, "POST /rpc HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		addr, len(body), body[:sent])
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestPostBodyTimeout: a body still arriving after BodyTimeout gets 408,
// and the connection is closed rather than drained.
func TestPostBodyTimeout(t *testing.T) {
	ts := newTestServer(t, &server.Options{BodyTimeout: 50 * time.Millisecond})
	body := `{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}`
	c := slowPost(t, ts.Listener.Addr().String(), body, 10)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer to a stalled body: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout || !resp.Close {
		t.Fatalf("stalled body: %d, Connection: close %v; want 408 and close", resp.StatusCode, resp.Close)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("after the 408: %v, want EOF", err)
	}
}

// TestPostBodyTimeoutCleared: the body deadline is gone once the body is
// read, so a call may run longer than BodyTimeout.
func TestPostBodyTimeoutCleared(t *testing.T) {
	ts := newTestServer(t, &server.Options{BodyTimeout: 50 * time.Millisecond})
	status, body := post(t, ts.URL, "application/json", `{"jsonrpc":"2.0","method":"sleep","params":{"ms":300},"id":1}`, nil)
	if status != 200 {
		t.Fatalf("status %d", status)
	}
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","result":{"slept":300},"id":1}`, body)
}

// TestShutdownSkipsSlowBodies: POSTs whose bodies are still arriving do
// not hold Shutdown up; once in, they get 503.
func TestShutdownSkipsSlowBodies(t *testing.T) {
	const n = 50
	arrived := make(chan struct{}, n)
	ts := newTestServer(t, &server.Options{Authenticate: func(*http.Request) (any, error) {
		arrived <- struct{}{} // the body is read next
		return nil, nil
	}})
	body := `{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}`
	conns := make([]net.Conn, n)
	for i := range conns {
		conns[i] = slowPost(t, ts.Listener.Addr().String(), body, 10)
	}
	for range n {
		select {
		case <-arrived:
		case <-timeout(t).Done():
			t.Fatal("the POSTs did not reach the server")
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	if err := ts.srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown with %d bodies arriving: %v", n, err)
	}
	for _, c := range conns {
		if _, err := io.WriteString(c, body[10:]); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("POST finished after Shutdown: %d, want 503", resp.StatusCode)
		}
	}
}

// TestShutdownInTime: Shutdown returns nil when nothing was cut short,
// even if ctx has ended by then.
func TestShutdownInTime(t *testing.T) {
	ts := newTestServer(t, nil)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := ts.srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown with nothing open = %v, want nil", err)
	}
}
