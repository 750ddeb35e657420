package hub_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/peer"
)

// BenchmarkPublishBudget is BenchmarkPublish with the subscribers'
// connections sharing a queue budget, as a server's do.
func BenchmarkPublishBudget(b *testing.B) {
	for _, n := range []int{1, 10, 100, 1000} {
		b.Run(fmt.Sprintf("subscribers=%d", n), func(b *testing.B) {
			h := hub.New(nil)
			budget := peer.NewBudget(256 << 20)
			conns := make([]*peer.Conn, n)
			for i := range conns {
				conns[i] = peer.NewConn(&discard{closed: make(chan struct{})}, &peer.Options{MaxQueue: 1 << 30, QueueBudget: budget})
				if err := h.Join(conns[i], "", nil).Subscribe("bench.topic"); err != nil {
					b.Fatal(err)
				}
			}
			data := map[string]any{"price": 101.25, "symbol": "SWB"}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if got, err := h.Publish(ctx, "bench.topic", data); err != nil || got != n {
					b.Fatalf("Publish = %d, %v", got, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/delivery")
			for _, c := range conns {
				c.Close()
				<-c.Done()
			}
		})
	}
}
