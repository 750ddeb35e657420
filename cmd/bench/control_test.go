package main

import (
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/server"
)

// TestControlAnswersPings keeps a publisher idle for several times what a
// hub allows a peer that does not answer its pings: it must still be
// connected, and publish.
func TestControlAnswersPings(t *testing.T) {
	h := hub.New(&hub.Options{Policy: hub.AllowAll})
	const interval, timeout = 50 * time.Millisecond, 500 * time.Millisecond
	srv := server.New(&server.Options{Hub: h, PingInterval: interval, PingTimeout: timeout})
	ts := httptest.NewServer(srv)
	defer ts.Close()
	defer srv.Shutdown(t.Context())
	pub, err := dialControl(t.Context(), "ws"+strings.TrimPrefix(ts.URL, "http")+"/rpc")
	if err != nil {
		t.Fatal(err)
	}
	defer pub.close()
	time.Sleep(3 * (interval + timeout)) // the idle time under test, not a wait for an event
	if err := publish(pub, 1); err != nil {
		t.Fatal(err)
	}
	// A reply with an error is one.
	reply, err := pub.call([]byte(`{"jsonrpc":"2.0","method":"rpc.publish","params":{"topic":"a.*"},"id":2}`), time.Minute)
	if err != nil || !bytes.Contains(reply, []byte(`"error":`)) {
		t.Fatalf("publishing on a wildcard: %s, %v", reply, err)
	}
}

// TestMetricClosesItsConnection reads a metric: the connection it used
// must then be closed, not kept idle, where it would count against the
// hub's -max-conns.
func TestMetricClosesItsConnection(t *testing.T) {
	closed := make(chan struct{}, 1)
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("# HELP x\nswitchboard_connections 7\n"))
	}))
	ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			select {
			case closed <- struct{}{}:
			default:
			}
		}
	}
	ts.Start()
	defer ts.Close()
	v, err := metric(t.Context(), ts.URL+"/metrics", "switchboard_connections")
	if err != nil || v != 7 {
		t.Fatalf("metric: %v, %v", v, err)
	}
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the connection is still open 10 s after the answer")
	}
}
