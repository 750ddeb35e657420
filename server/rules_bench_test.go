package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/golang-jwt/jwt/v5"
	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/internal/hubtest"
	"github.com/switchboard-rpc/switchboard/peer"
	"github.com/switchboard-rpc/switchboard/server"
	"github.com/switchboard-rpc/switchboard/server/demo"
)

// BenchmarkRules compares a hub whose policy is the declarative rules of
// the walk-through with one that allows everything, on the paths a rule
// is checked on: rpc.publish (Policy) and a call of a hub method
// (Authorize). Both hubs take the same JWT; one caller each, over real
// WebSockets on 127.0.0.1, sequential calls in alternating rounds so that
// both see the same machine. It reports the time per call of each and
// their ratio; ns/op counts both and means little.
func BenchmarkRules(b *testing.B) {
	set := walkthroughRules(b)
	j := newJWT(b, &server.JWTOptions{Key: hmacSecret})
	tok := sign(b, "HS256", hmacSecret, "", jwt.MapClaims{"sub": "orders", "role": "backend", "exp": time.Now().Add(time.Hour).Unix()})
	start := func(o *server.Options) *peer.Conn {
		o.Router = demo.Mux()
		o.Authenticate = j.Authenticate
		o.Conn.MaxQueue = 1 << 20
		srv := server.New(o)
		ts := httptest.NewServer(srv)
		b.Cleanup(func() {
			_ = srv.Shutdown(context.Background())
			ts.Close()
		})
		ws := hubtest.DialWS(b, hubtest.WSURL(ts.URL),
			&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + tok}}})
		c := hubtest.ServePeer(b, ws, nil)
		return c
	}
	without := start(&server.Options{Hub: hub.New(&hub.Options{Policy: hub.AllowAll})})
	with := start(&server.Options{Hub: hub.New(&hub.Options{Policy: set.Policy}), Authorize: set.Authorize})

	for _, bc := range []struct {
		name, method string
		params       any
	}{
		{"publish", "rpc.publish", []any{"user.alice.inbox", map[string]any{"price": 101.25}}},
		{"call", "add", []int{1, 2}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			run := func(c *peer.Conn, n int) time.Duration {
				t0 := time.Now()
				var res json.RawMessage
				for range n {
					if err := c.Call(context.Background(), bc.method, bc.params, &res); err != nil {
						b.Fatal(err)
					}
				}
				return time.Since(t0)
			}
			run(without, 500)
			run(with, 500)
			b.ResetTimer()
			const round = 500
			var dw, dr time.Duration
			for done := 0; done < b.N; done += round {
				n := min(round, b.N-done)
				dw += run(without, n)
				dr += run(with, n)
			}
			b.StopTimer()
			b.ReportMetric(float64(dw.Nanoseconds())/float64(b.N), "ns/without")
			b.ReportMetric(float64(dr.Nanoseconds())/float64(b.N), "ns/rules")
			b.ReportMetric(float64(dr)/float64(dw), "rules/without")
		})
	}
}
