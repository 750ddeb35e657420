package prom_test

import (
	"net"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/switchboard-rpc/switchboard/server"
	"github.com/switchboard-rpc/switchboard/server/prom"
)

func TestWatchListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := server.NewListener(ln, &server.ListenerOptions{MaxConns: 1})
	defer l.Close()
	m := prom.New()
	m.WatchListener(l)

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	accepted, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer accepted.Close()

	rec := httptest.NewRecorder()
	m.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{
		"switchboard_listener_connections 1\n",
		`switchboard_listener_refused_total{limit="max_conns"} 0` + "\n",
		`switchboard_listener_refused_total{limit="max_conns_per_addr"} 0` + "\n",
	} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func TestHubMetrics(t *testing.T) {
	m := prom.New()
	m.Watch(server.New(nil))
	rec := httptest.NewRecorder()
	m.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{
		"switchboard_providers 0\n",
		"switchboard_forwards_in_flight 0\n",
		"switchboard_provider_lost_total 0\n",
		"switchboard_addressed_total 0\n",
		"switchboard_history_events 0\n",
		`switchboard_recoveries_total{outcome="incomplete"} 0` + "\n",
	} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}
