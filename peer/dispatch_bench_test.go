package peer

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// repeatTransport returns a fresh copy of one frame at each Read, left
// times, and then reports the connection closed by the other side; it
// counts what is written. A Conn served over it reads, runs and answers
// the frames one after the other with no goroutine hand-off in the way,
// as a busy connection whose next message is always there.
type repeatTransport struct {
	frame  []byte
	left   atomic.Int64
	writes atomic.Int64
}

func (t *repeatTransport) Read(context.Context) ([]byte, error) {
	if t.left.Add(-1) < 0 {
		return nil, &CloseError{Code: CloseNormal}
	}
	return append([]byte(nil), t.frame...), nil
}

func (t *repeatTransport) Write(context.Context, []byte) error {
	t.writes.Add(1)
	return nil
}

func (t *repeatTransport) Close(int, string) error { return nil }

// serveFrames serves n copies of frame on a new Conn with the options
// the hub gives its connections for these benchmarks (an OnServe hook
// set), and returns how many requests were served.
func serveFrames(tb testing.TB, frame []byte, n int) int64 {
	t := &repeatTransport{frame: frame}
	t.left.Store(int64(n))
	var served atomic.Int64
	c := NewConn(t, &Options{Router: benchMux(), OnServe: func(string, Code, time.Duration) { served.Add(1) }})
	if err := c.Serve(context.Background()); err == nil {
		tb.Fatal("Serve returned nil; want the close of the other side")
	}
	return served.Load()
}

// BenchmarkDispatchBatch100 measures what a connection's reader does
// with the load generator's batch of 100 echo calls: decode it, run each
// call with an OnServe hook set, and write the reply array (inline, no
// writer being at work). It is BenchmarkServeBatch100 without the two
// goroutine hand-offs of its transport per batch, whose cost varies with
// the machine's load more than this does.
func BenchmarkDispatchBatch100(b *testing.B) {
	frame := batchFrame(100, "echo", "[1]")
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	if n := serveFrames(b, frame, b.N); n != int64(b.N)*100 {
		b.Fatalf("served %d requests in %d batches", n, b.N)
	}
}

// BenchmarkDispatchCall measures the same for single echo calls.
func BenchmarkDispatchCall(b *testing.B) {
	frame := []byte(`{"jsonrpc":"2.0","method":"echo","params":[1],"id":1}`)
	b.ReportAllocs()
	if n := serveFrames(b, frame, b.N); n != int64(b.N) {
		b.Fatalf("served %d calls in %d frames", n, b.N)
	}
}
