package prom_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/peer"
	"github.com/switchboard-rpc/switchboard/server"
	"github.com/switchboard-rpc/switchboard/server/prom"
)

func Example() {
	mux := peer.NewMux()
	mux.Handle("add", peer.Func(func(_ context.Context, p []int) (int, error) { return p[0] + p[1], nil }))
	m := prom.New()
	srv := server.New(&server.Options{Router: mux, OnServe: m.Observe})
	m.Watch(srv)

	// One call, over POST.
	req := httptest.NewRequest("POST", "/rpc", strings.NewReader(`{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}`))
	req.Header.Set("Content-Type", "application/json")
	srv.ServeHTTP(httptest.NewRecorder(), req)

	// The metrics, as Prometheus scrapes them (some of them).
	rec := httptest.NewRecorder()
	m.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for line := range strings.Lines(rec.Body.String()) {
		if strings.HasPrefix(line, "switchboard_calls_total") || strings.HasPrefix(line, "switchboard_connections") {
			fmt.Print(line)
		}
	}
	// Output:
	// switchboard_calls_total{method="add",outcome="ok"} 1
	// switchboard_connections 0
	// switchboard_connections_total 0
}

// The calls a server has served, for the admin API: a hub made with
// Options.Calls shows them in admin.info, where the admin page charts
// them per second.
func ExampleMetrics_Calls() {
	mux := peer.NewMux()
	mux.Handle("add", peer.Func(func(_ context.Context, p []int) (int, error) { return p[0] + p[1], nil }))
	m := prom.New()
	h := hub.New(&hub.Options{Calls: m.Calls})
	srv := server.New(&server.Options{Router: mux, Hub: h, OnServe: m.Observe})

	req := httptest.NewRequest("POST", "/rpc", strings.NewReader(`[{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1},{"jsonrpc":"2.0","method":"add","params":[3,4],"id":2}]`))
	req.Header.Set("Content-Type", "application/json")
	srv.ServeHTTP(httptest.NewRecorder(), req)

	nodes, _ := h.Nodes(context.Background())
	fmt.Println(m.Calls(), nodes[0].Calls)
	// Output:
	// 2 2
}
