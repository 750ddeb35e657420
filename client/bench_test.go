package client

import (
	"testing"

	"github.com/switchboard-rpc/switchboard/internal/hubtest"
	"go.uber.org/zap"
)

// benchClient starts a test hub and dials it; the client is closed when
// the benchmark ends.
func benchClient(b *testing.B) (*hubtest.Hub, *Client) {
	h := hubtest.Start(b, nil)
	c, err := Dial(b.Context(), h.WS(), &Options{Logger: zap.NewNop()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return h, c
}

// BenchmarkCall measures a call's round trip through the client to the
// real hub over a WebSocket on 127.0.0.1.
func BenchmarkCall(b *testing.B) {
	_, c := benchClient(b)
	b.ReportAllocs()
	for b.Loop() {
		var sum float64
		if err := c.Call(b.Context(), "add", []int{1, 2}, &sum); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCallParallel runs calls from many goroutines over one client.
func BenchmarkCallParallel(b *testing.B) {
	_, c := benchClient(b)
	b.ReportAllocs()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			var sum float64
			if err := c.Call(b.Context(), "add", []int{1, 2}, &sum); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkEvent measures an event from the hub's Publish to the
// subscription's handler.
func BenchmarkEvent(b *testing.B) {
	h, c := benchClient(b)
	got := make(chan struct{}, 1)
	if _, err := c.Subscribe(b.Context(), "bench", func(Event) { got <- struct{}{} }); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.Hub().Publish(b.Context(), "bench", 1); err != nil {
			b.Fatal(err)
		}
		<-got
	}
}

// BenchmarkHTTPCall measures one POST per call, over kept-alive
// connections.
func BenchmarkHTTPCall(b *testing.B) {
	h := hubtest.Start(b, nil)
	hc := NewHTTP(h.HTTP(), nil)
	defer hc.Close()
	b.ReportAllocs()
	for b.Loop() {
		var sum float64
		if err := hc.Call(b.Context(), "add", []int{1, 2}, &sum); err != nil {
			b.Fatal(err)
		}
	}
}
