package server_test

import (
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/coder/websocket"
	"github.com/switchboard-rpc/switchboard/server"
)

// /readyz is 200 while Options.Ready has nothing against it, 503 with its
// reason while it has, and 503 once the server shuts down; /healthz only
// says the process is alive.
func TestReadyz(t *testing.T) {
	var down atomic.Bool
	ts := newTestServer(t, &server.Options{Ready: func() error {
		if down.Load() {
			return errors.New("NATS link down")
		}
		return nil
	}})
	if status, body := get(t, ts.URL+"/readyz"); status != http.StatusOK || body != "ready\n" {
		t.Fatalf("readyz: %d %q, want 200 ready", status, body)
	}
	down.Store(true)
	if status, body := get(t, ts.URL+"/readyz"); status != http.StatusServiceUnavailable || body != "NATS link down\n" {
		t.Fatalf("readyz with the link down: %d %q, want 503 and the reason", status, body)
	}
	if status, _ := get(t, ts.URL+"/healthz"); status != http.StatusOK {
		t.Fatalf("healthz with the link down: %d, want 200: the process is alive", status)
	}
	down.Store(false)
	if err := ts.srv.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if status, body := get(t, ts.URL+"/readyz"); status != http.StatusServiceUnavailable || body != "shutting down\n" {
		t.Fatalf("readyz while shutting down: %d %q, want 503", status, body)
	}
	// A client that dials now is told to come back later, or elsewhere.
	_, resp, err := websocket.Dial(timeout(t), ts.wsURL(), nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("dial while shutting down: %v, %+v: want 503 with Retry-After: 1", err, resp)
	}
}

// /healthz names the version the server was given, after "ok".
func TestHealthzVersion(t *testing.T) {
	ts := newTestServer(t, &server.Options{Version: "v1.2.3"})
	if status, body := get(t, ts.URL+"/healthz"); status != http.StatusOK || body != "ok v1.2.3\n" {
		t.Fatalf("healthz: %d %q, want 200 \"ok v1.2.3\"", status, body)
	}
}
