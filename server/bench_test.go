package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/coder/websocket"
	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/peer"
	"github.com/switchboard-rpc/switchboard/server"
)

var benchEvent = []byte(`{"jsonrpc":"2.0","method":"rpc.event","params":{"topic":"bench","data":{"price":101.25,"symbol":"SWB"}}}`)

// subscribers dials n raw WebSockets to url and returns them with a
// function that waits until each has read want messages.
func benchSubscribers(b *testing.B, url string, n int, subscribe bool) ([]*websocket.Conn, func(want int)) {
	ctx := context.Background()
	conns := make([]*websocket.Conn, n)
	for i := range conns {
		ws, _, err := websocket.Dial(ctx, url, nil)
		if err != nil {
			b.Fatal(err)
		}
		conns[i] = ws
		if subscribe {
			if err := ws.Write(ctx, websocket.MessageText, []byte(`{"jsonrpc":"2.0","method":"rpc.subscribe","params":["bench"],"id":1}`)); err != nil {
				b.Fatal(err)
			}
			if _, _, err := ws.Read(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	wait := func(want int) {
		var wg sync.WaitGroup
		for _, ws := range conns {
			wg.Go(func() {
				for range want {
					if _, _, err := ws.Read(ctx); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
	}
	return conns, wait
}

// BenchmarkFanOut publishes to n subscribers over real WebSockets on
// 127.0.0.1 and waits until every subscriber has read every event. One op
// is one message published (n deliveries). Compare with
// BenchmarkRawFanOut, the same work done with coder/websocket alone.
func BenchmarkFanOut(b *testing.B) {
	for _, n := range []int{1, 10, 100, 1000} {
		b.Run(fmt.Sprintf("subscribers=%d", n), func(b *testing.B) {
			h := hub.New(nil)
			srv := server.New(&server.Options{Hub: h, Conn: peer.Options{MaxQueue: 1 << 30}})
			ts := httptest.NewServer(srv)
			defer ts.Close()
			defer srv.Shutdown(context.Background()) //nolint:errcheck
			conns, wait := benchSubscribers(b, "ws"+strings.TrimPrefix(ts.URL, "http")+"/rpc", n, true)
			data := map[string]any{"price": 101.25, "symbol": "SWB"}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			done := make(chan struct{})
			go func() { defer close(done); wait(b.N) }()
			for range b.N {
				if _, err := h.Publish(ctx, "bench", data); err != nil {
					b.Fatal(err)
				}
			}
			<-done
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/delivery")
			for _, ws := range conns {
				ws.CloseNow()
			}
		})
	}
}

// BenchmarkRawFanOut is the floor for BenchmarkFanOut: a bare
// coder/websocket server that writes the same pre-encoded event to n
// connections, each through a buffered channel and a writer goroutine.
func BenchmarkRawFanOut(b *testing.B) {
	for _, n := range []int{1, 10, 100, 1000} {
		b.Run(fmt.Sprintf("subscribers=%d", n), func(b *testing.B) {
			var mu sync.Mutex
			var queues []chan []byte
			ready := make(chan struct{}, n)
			var handlers sync.WaitGroup
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				handlers.Add(1)
				defer handlers.Done()
				ws, err := websocket.Accept(w, r, nil)
				if err != nil {
					return
				}
				defer ws.CloseNow()
				q := make(chan []byte, 1<<16)
				mu.Lock()
				queues = append(queues, q)
				mu.Unlock()
				ready <- struct{}{}
				for msg := range q {
					if err := ws.Write(r.Context(), websocket.MessageText, msg); err != nil {
						return
					}
				}
			}))
			defer ts.Close()
			conns, wait := benchSubscribers(b, "ws"+strings.TrimPrefix(ts.URL, "http"), n, false)
			for range n {
				<-ready
			}
			b.ReportAllocs()
			b.ResetTimer()
			done := make(chan struct{})
			go func() { defer close(done); wait(b.N) }()
			for range b.N {
				mu.Lock()
				for _, q := range queues {
					q <- benchEvent
				}
				mu.Unlock()
			}
			<-done
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/delivery")
			for _, q := range queues {
				close(q)
			}
			for _, ws := range conns {
				ws.CloseNow()
			}
			handlers.Wait()
		})
	}
}
