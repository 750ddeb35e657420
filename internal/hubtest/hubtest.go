package hubtest

import (
	"context"
	"crypto/x509"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/internal/port"
	"github.com/switchboard-rpc/switchboard/server"
	"github.com/switchboard-rpc/switchboard/server/demo"
)

// Grace is how long calls in flight may run on when [Hub.Stop] shuts the
// hub down; then every connection is closed regardless.
const Grace = 100 * time.Millisecond

// Options configures a Hub. A nil *Options is valid.
type Options struct {
	// Server configures each server the Hub starts, such as
	// Authenticate or Logger. Its Router and Hub are ignored: every
	// start gets the demo methods and a new hub with [hub.AllowAll].
	Server server.Options
	// History bounds the history of each new hub (see [hub.History]).
	History hub.History
	// TLS serves wss:// and https:// with the certificate of
	// net/http/httptest; [Hub.Certificate] returns it for the clients
	// to trust. Failed TLS handshakes are not logged. Default false.
	TLS bool
}

// Hub is a running or stopped test hub. Its methods are safe for
// concurrent use, except that Start and Stop must not overlap.
type Hub struct {
	t    testing.TB
	addr string
	opts Options

	mu   sync.Mutex
	ts   *httptest.Server // nil when stopped
	srv  *server.Server   // the last one started
	cert *x509.Certificate
}

// Start starts a hub on a free port of 127.0.0.1. It is stopped when
// the test ends; a failure to listen fails the test.
func Start(t testing.TB, opts *Options) *Hub {
	t.Helper()
	h := &Hub{t: t}
	if opts != nil {
		h.opts = *opts
	}
	addr, err := port.Restartable() // Restart takes it again
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	h.addr = ln.Addr().String()
	h.serve(ln)
	t.Cleanup(h.Stop)
	return h
}

// Start starts a new hub, which knows no one, on the address of the
// stopped one. It retries for up to two seconds while the old socket
// lingers, then fails the test.
func (h *Hub) Start() {
	h.t.Helper()
	var ln net.Listener
	var err error
	for range 100 {
		if ln, err = net.Listen("tcp", h.addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond) // not a synchronization: the port is busy
	}
	if err != nil {
		h.t.Fatal(err)
	}
	h.serve(ln)
}

func (h *Hub) serve(ln net.Listener) {
	o := h.opts.Server
	o.Router = demo.Mux()
	o.Hub = hub.New(&hub.Options{Policy: hub.AllowAll, History: h.opts.History})
	srv := server.New(&o)
	ts := &httptest.Server{Listener: ln, Config: &http.Server{Handler: srv}}
	if h.opts.TLS {
		ts.Config.ErrorLog = log.New(io.Discard, "", 0) // tests refuse the certificate on purpose
		ts.StartTLS()
	} else {
		ts.Start()
	}
	h.mu.Lock()
	h.ts, h.srv = ts, srv
	if h.opts.TLS {
		h.cert = ts.Certificate()
	}
	h.mu.Unlock()
}

// Stop shuts the hub down as its process would on SIGTERM: new
// connections are refused, calls in flight get [Grace] to finish, every
// WebSocket is closed with 1001, then the listener and whatever is left.
// Stop returns when the server's goroutines have ended; stopping a
// stopped hub does nothing.
func (h *Hub) Stop() {
	h.mu.Lock()
	ts, srv := h.ts, h.srv
	h.ts = nil
	h.mu.Unlock()
	if ts == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), Grace)
	defer cancel()
	_ = srv.Shutdown(ctx)
	ts.CloseClientConnections()
	ts.Close()
}

// Addr returns the host:port the hub listens on, the same after every
// Start.
func (h *Hub) Addr() string { return h.addr }

// WS returns the WebSocket URL of /rpc: ws://, or wss:// with TLS.
func (h *Hub) WS() string { return h.url("ws") }

// HTTP returns the URL of /rpc for POST: http://, or https:// with TLS.
func (h *Hub) HTTP() string { return h.url("http") }

func (h *Hub) url(scheme string) string {
	if h.opts.TLS {
		scheme += "s"
	}
	return scheme + "://" + h.addr + "/rpc"
}

// Certificate returns the certificate a TLS hub serves, so that a
// client can add it to its roots; nil without TLS.
func (h *Hub) Certificate() *x509.Certificate {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cert
}

// Hub returns the hub of the running server, or of the last one if
// stopped.
func (h *Hub) Hub() *hub.Hub {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.srv.Hub()
}

// Publish publishes data on topic through the hub's Go API and returns
// the number of peers it was delivered to; an error fails the test.
func (h *Hub) Publish(topic string, data any) int {
	h.t.Helper()
	n, err := h.Hub().Publish(context.Background(), topic, data)
	if err != nil {
		h.t.Fatalf("Publish: %v", err)
	}
	return n
}
