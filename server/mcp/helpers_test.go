package mcp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coder/websocket"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-rpc/switchboard/client"
	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
	"github.com/switchboard-rpc/switchboard/server"
	"github.com/switchboard-rpc/switchboard/server/demo"
	"github.com/switchboard-rpc/switchboard/server/mcp"
)

// testHub is a hub with the demo methods and /mcp, on 127.0.0.1.
type testHub struct {
	*httptest.Server
	srv *server.Server
	mcp *mcp.Handler
}

func newTestHub(t testing.TB, opts *server.Options) *testHub {
	t.Helper()
	return newTestHubWith(t, opts, nil)
}

func newTestHubWith(t testing.TB, opts *server.Options, mopts *mcp.Options) *testHub {
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
	srv := server.New(opts)
	m := mcp.New(srv, mopts)
	srv.Handle("/mcp", m)
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testkit.Wait)
		defer cancel()
		if err := m.Shutdown(ctx); err != nil {
			t.Errorf("mcp Shutdown: %v", err)
		}
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		ts.Close()
	})
	return &testHub{Server: ts, srv: srv, mcp: m}
}

func (th *testHub) wsURL() string {
	return "ws" + strings.TrimPrefix(th.URL, "http") + "/rpc"
}

// bearer adds a token to each request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// connect opens an MCP session with the SDK's client, closed at the end
// of the test.
func (th *testHub) connect(t *testing.T, token string, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	cs, err := th.tryConnect(t.Context(), token, opts)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func (th *testHub) tryConnect(ctx context.Context, token string, opts *sdk.ClientOptions) (*sdk.ClientSession, error) {
	hc := &http.Client{Transport: http.DefaultTransport}
	if token != "" {
		hc.Transport = bearer{token, http.DefaultTransport}
	}
	c := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1.0.0"}, opts)
	ctx, cancel := context.WithTimeout(ctx, testkit.Wait)
	defer cancel()
	return c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: th.URL + "/mcp", HTTPClient: hc}, nil)
}

// provider dials the hub as a Go client peer that provides method with h.
func (th *testHub) provider(t *testing.T, token, method string, h peer.Handler) (*client.Client, *client.Provision) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Wait)
	defer cancel()
	c, err := client.Dial(ctx, th.wsURL(), &client.Options{Token: token})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	p, err := c.Provide(ctx, method, h)
	if err != nil {
		t.Fatalf("provide %s: %v", method, err)
	}
	return c, p
}

// toolNames returns the names of the tools a session lists.
func toolNames(t *testing.T, cs *sdk.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		names = append(names, tool.Name)
	}
	return names
}

func has(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// dialPeer opens a WebSocket to the hub served by router, a raw peer.
func dialPeer(t *testing.T, th *testHub, router peer.Router) *peer.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Wait)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, th.wsURL(), nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	conn := peer.NewConn(peer.WebSocket(ws), &peer.Options{Router: router})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = conn.Serve(context.Background())
	}()
	t.Cleanup(func() {
		_ = conn.Close()
		<-done
	})
	return conn
}
