package client

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/server"
	"github.com/switchboard-rpc/switchboard/server/demo"
)

// testHub is the real hub, with the demo methods, on 127.0.0.1. It can be
// stopped and started again on the same port under connected clients,
// as a restarted process would be: the new hub knows no one.
type testHub struct {
	t    testing.TB
	addr string
	opts server.Options // Router and Hub are set by serve

	mu  sync.Mutex
	hs  *http.Server
	srv *server.Server
	wg  sync.WaitGroup
}

func startHub(t testing.TB) *testHub { return startHubWith(t, nil) }

func startHubWith(t testing.TB, opts *server.Options) *testHub {
	t.Helper()
	h := &testHub{t: t}
	if opts != nil {
		h.opts = *opts
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.addr = ln.Addr().String()
	h.serve(ln)
	t.Cleanup(h.stop)
	return h
}

func (h *testHub) url() string     { return "ws://" + h.addr + "/rpc" }
func (h *testHub) httpURL() string { return "http://" + h.addr + "/rpc" }

func (h *testHub) serve(ln net.Listener) {
	o := h.opts
	o.Router = demo.Mux()
	o.Hub = hub.New(&hub.Options{Policy: hub.AllowAll})
	srv := server.New(&o)
	hs := &http.Server{Handler: srv}
	h.mu.Lock()
	h.hs, h.srv = hs, srv
	h.mu.Unlock()
	h.wg.Go(func() { _ = hs.Serve(ln) })
}

// hub returns the running hub.
func (h *testHub) hub() *hub.Hub {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.srv.Hub()
}

// start listens again on the same address.
func (h *testHub) start() {
	h.t.Helper()
	var ln net.Listener
	var err error
	for range 100 { // the old socket may linger a moment
		if ln, err = net.Listen("tcp", h.addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		h.t.Fatal(err)
	}
	h.serve(ln)
}

// stop shuts the hub down as its process would on SIGTERM: calls in
// flight get 100ms to finish, then every WebSocket is closed, and so is
// the listener.
func (h *testHub) stop() {
	h.mu.Lock()
	hs, srv := h.hs, h.srv
	h.hs = nil
	h.mu.Unlock()
	if hs == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_ = srv.Shutdown(ctx)
	_ = hs.Close()
	h.wg.Wait()
}

// publish publishes through the hub's Go API.
func (h *testHub) publish(topic string, data any) int {
	h.t.Helper()
	n, err := h.hub().Publish(context.Background(), topic, data)
	if err != nil {
		h.t.Fatalf("Publish: %v", err)
	}
	return n
}
