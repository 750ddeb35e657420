package hub_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/peer"
)

// BenchmarkAddressed compares rpc.call to one peer with a direct call of
// the server's echo and with a call forwarded to the same peer as the
// provider of its method, in the same run, over real WebSockets on
// 127.0.0.1: one caller making b.N sequential calls of each kind, in
// alternating rounds. It reports the time per call of each kind and the
// ratios of the addressed call to the others.
func BenchmarkAddressed(b *testing.B) {
	rh := startHub(b, nil)
	svc := peer.NewMux()
	svc.Handle("bench.echo", peer.Func(func(_ context.Context, p json.RawMessage) (json.RawMessage, error) {
		return p, nil
	}))
	target := rh.dial(b, svc)
	provide(b, target, "bench.*")
	id := whoami(b, target).ID
	caller := rh.dial(b, nil)
	params := json.RawMessage(`{"symbol":"SWB","price":101.25,"sizes":[1,2,3]}`)
	addressed := json.RawMessage(`{"peer":"` + id + `","method":"bench.echo","params":` + string(params) + `}`)
	run := func(method string, p json.RawMessage, n int) time.Duration {
		start := time.Now()
		var res json.RawMessage
		for range n {
			if err := caller.Call(context.Background(), method, p, &res); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start)
	}
	run("echo", params, 1000) // warm up every path
	run("bench.echo", params, 1000)
	run("rpc.call", addressed, 1000)
	b.ReportAllocs()
	b.ResetTimer()
	const round = 500
	var direct, forwarded, addr time.Duration
	for done := 0; done < b.N; done += round {
		n := min(round, b.N-done)
		direct += run("echo", params, n)
		forwarded += run("bench.echo", params, n)
		addr += run("rpc.call", addressed, n)
	}
	b.StopTimer()
	b.ReportMetric(float64(direct.Nanoseconds())/float64(b.N), "ns/direct")
	b.ReportMetric(float64(forwarded.Nanoseconds())/float64(b.N), "ns/forwarded")
	b.ReportMetric(float64(addr.Nanoseconds())/float64(b.N), "ns/addressed")
	b.ReportMetric(float64(addr)/float64(direct), "addressed/direct")
	b.ReportMetric(float64(addr)/float64(forwarded), "addressed/forwarded")
}
