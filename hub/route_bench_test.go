package hub_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/peer"
)

// BenchmarkForward compares a call forwarded by the hub to the peer that
// provides its method with a direct call of the same method to the server,
// in the same run, over real WebSockets on 127.0.0.1: one caller making
// b.N calls of each kind, in alternating rounds, sequentially
// (concurrency=1) or 16 at a time.
// It reports the time per call of each kind (wall time over calls: the
// latency when sequential, the inverse of throughput when concurrent) and
// their ratio; ns/op counts both kinds and means little.
func BenchmarkForward(b *testing.B) {
	for _, conc := range []int{1, 16} {
		b.Run(fmt.Sprintf("concurrency=%d", conc), func(b *testing.B) {
			rh := startHub(b, nil)
			svc := peer.NewMux()
			svc.Handle("bench.echo", peer.Func(func(_ context.Context, p json.RawMessage) (json.RawMessage, error) {
				return p, nil
			}))
			provide(b, rh.dial(b, svc), "bench.*")
			caller := rh.dial(b, nil)
			params := json.RawMessage(`{"symbol":"SWB","price":101.25,"sizes":[1,2,3]}`)
			run := func(method string, n int) time.Duration {
				start := time.Now()
				var wg sync.WaitGroup
				for w := range conc {
					wg.Go(func() {
						var res json.RawMessage
						for i := w; i < n; i += conc {
							if err := caller.Call(context.Background(), method, params, &res); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				return time.Since(start)
			}
			run("echo", 1000) // warm up both paths
			run("bench.echo", 1000)
			b.ReportAllocs()
			b.ResetTimer()
			// Rounds of each kind in turn, so that both see the same
			// machine: other load comes and goes.
			const round = 500
			var direct, forwarded time.Duration
			for done := 0; done < b.N; done += round {
				n := min(round, b.N-done)
				direct += run("echo", n)
				forwarded += run("bench.echo", n)
			}
			b.StopTimer()
			b.ReportMetric(float64(direct.Nanoseconds())/float64(b.N), "ns/direct")
			b.ReportMetric(float64(forwarded.Nanoseconds())/float64(b.N), "ns/forwarded")
			b.ReportMetric(float64(forwarded)/float64(direct), "forwarded/direct")
		})
	}
}
