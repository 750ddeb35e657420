package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/internal/hubtest"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
	"github.com/switchboard-rpc/switchboard/server"
	"github.com/switchboard-rpc/switchboard/server/demo"
	"github.com/switchboard-rpc/switchboard/server/prom"
)

// testServer is a demo server on 127.0.0.1 with an allow-all policy, and
// its metrics on /metrics.
type testServer struct {
	*httptest.Server
	srv *server.Server
}

func newTestServer(t *testing.T, opts *server.Options) *testServer {
	t.Helper()
	if opts == nil {
		opts = &server.Options{}
	}
	if opts.Router == nil {
		opts.Router = demo.Mux()
	}
	if opts.Hub == nil {
		opts.Hub = hub.New(&hub.Options{Policy: hub.AllowAll})
	}
	metrics := prom.New()
	if opts.OnServe == nil {
		opts.OnServe = metrics.Observe
	}
	srv := server.New(opts)
	metrics.Watch(srv)
	routes := http.NewServeMux()
	routes.Handle("/", srv)
	routes.Handle("/metrics", metrics)
	ts := httptest.NewServer(routes)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testkit.Wait)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		ts.Close()
	})
	return &testServer{Server: ts, srv: srv}
}

func (ts *testServer) wsURL() string { return hubtest.WSURL(ts.URL) }

// dialRaw opens a raw WebSocket to /rpc.
func (ts *testServer) dialRaw(t *testing.T, opts *websocket.DialOptions) *websocket.Conn {
	t.Helper()
	return hubtest.DialWS(t, ts.wsURL(), opts)
}

// dialPeer opens a WebSocket to /rpc and serves it as a peer.Conn with
// the given router (nil: none). The conn is closed at the end of the test.
func (ts *testServer) dialPeer(t *testing.T, opts *peer.Options) *peer.Conn {
	t.Helper()
	return hubtest.ServePeer(t, ts.dialRaw(t, nil), opts)
}

// roundTrip writes one text message and reads one reply, within a deadline.
func roundTrip(t *testing.T, ws *websocket.Conn, msg string) string {
	t.Helper()
	write(t, ws, msg)
	return read(t, ws)
}

func write(t *testing.T, ws *websocket.Conn, msg string) {
	t.Helper()
	hubtest.WriteText(t, ws, msg)
}

func read(t *testing.T, ws *websocket.Conn) string {
	t.Helper()
	return hubtest.ReadText(t, ws)
}

// readReply reads the next message that is not an rpc.progress
// notification: the demo's sleep reports its progress every 100 ms, and
// on a loaded machine a report may come before the reply a test waits for.
func readReply(t *testing.T, ws *websocket.Conn) string {
	t.Helper()
	for {
		if got := read(t, ws); !strings.Contains(got, `"method":"rpc.progress"`) {
			return got
		}
	}
}

// post sends body to /rpc with the content type and returns the status
// and the body.
func post(t *testing.T, url, contentType, body string, header http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url+"/rpc", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, b := doRequest(t, req)
	return resp.StatusCode, string(b)
}

// doRequest sends req and returns the response, its body read and closed.
func doRequest(t *testing.T, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// eventRouter serves rpc.event notifications by sending their params to
// ch, in arrival order.
func eventRouter(ch chan<- json.RawMessage) peer.Router {
	return routerFunc(func(method string) (peer.Handler, peer.Mode) {
		if method != "rpc.event" {
			return nil, peer.Concurrent
		}
		return peer.HandlerFunc(func(_ context.Context, req *peer.Request) (any, error) {
			ch <- append(json.RawMessage(nil), req.Params...)
			return nil, nil
		}), peer.Inline
	})
}

type routerFunc func(string) (peer.Handler, peer.Mode)

func (f routerFunc) Lookup(m string) (peer.Handler, peer.Mode) { return f(m) }
