package hub_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/peer"
)

// discard is a Transport that drops what is written and reads nothing.
type discard struct {
	once   sync.Once
	closed chan struct{}
}

func (d *discard) Read(ctx context.Context) ([]byte, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-d.closed:
		return nil, &peer.CloseError{Code: peer.CloseNormal}
	}
}

func (d *discard) Write(context.Context, []byte) error { return nil }

func (d *discard) Close(int, string) error {
	d.once.Do(func() { close(d.closed) })
	return nil
}

// BenchmarkPublish measures Hub.Publish to n subscribers whose connections
// write to nowhere: the cost of matching, encoding once and queueing, not
// of the network. One op is one published message.
func BenchmarkPublish(b *testing.B) {
	for _, n := range []int{1, 10, 100, 1000} {
		b.Run(fmt.Sprintf("subscribers=%d", n), func(b *testing.B) {
			h := hub.New(nil)
			conns := make([]*peer.Conn, n)
			for i := range conns {
				conns[i] = peer.NewConn(&discard{closed: make(chan struct{})}, &peer.Options{MaxQueue: 1 << 30})
				p := h.Join(conns[i], "", nil)
				pattern := "bench.topic"
				if i%2 == 1 {
					pattern = "bench.*"
				}
				if err := p.Subscribe(pattern); err != nil {
					b.Fatal(err)
				}
			}
			data := map[string]any{"price": 101.25, "symbol": "SWB"}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if got, err := h.Publish(ctx, "bench.topic", data); err != nil || got != n {
					b.Fatalf("Publish = %d, %v", got, err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/delivery")
			for _, c := range conns {
				c.Close()
				<-c.Done()
			}
		})
	}
}

// BenchmarkMatch measures finding the subscribers of a topic among many
// patterns.
func BenchmarkMatch(b *testing.B) {
	h := hub.New(nil)
	var conns []*peer.Conn
	for i := range 1000 {
		c := peer.NewConn(&discard{closed: make(chan struct{})}, nil)
		conns = append(conns, c)
		p := h.Join(c, "", nil)
		if err := p.Subscribe(fmt.Sprintf("room%d.msg", i), fmt.Sprintf("room%d.*", i)); err != nil {
			b.Fatal(err)
		}
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if n, _ := h.Publish(ctx, "nobody.here", nil); n != 0 {
			b.Fatal(n)
		}
	}
	for _, c := range conns {
		c.Close()
		<-c.Done()
	}
}
