package peer

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func benchMux() *Mux {
	m := NewMux()
	m.Handle("echo", Func(func(_ context.Context, p json.RawMessage) (json.RawMessage, error) { return p, nil }))
	m.Handle("add", Func(func(_ context.Context, p struct{ A, B int }) (int, error) { return p.A + p.B, nil }))
	return m
}

// BenchmarkCall measures one call round trip through the in-memory pipe.
func BenchmarkCall(b *testing.B) {
	a, srv := Pipe(nil, &Options{Router: benchMux()})
	defer func() { a.Close(); <-a.Done(); <-srv.Done() }()
	ctx := context.Background()
	params := json.RawMessage(`{"a":1,"b":2}`)
	var res int
	b.ReportAllocs()
	for b.Loop() {
		if err := a.Call(ctx, "add", params, &res); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCallParallel keeps many calls in flight on one connection.
func BenchmarkCallParallel(b *testing.B) {
	a, srv := Pipe(nil, &Options{Router: benchMux()})
	defer func() { a.Close(); <-a.Done(); <-srv.Done() }()
	params := json.RawMessage(`["x"]`)
	b.ReportAllocs()
	b.SetParallelism(32) // 64 goroutines on 2 cores
	b.RunParallel(func(pb *testing.PB) {
		var res json.RawMessage
		for pb.Next() {
			if err := a.Call(context.Background(), "echo", params, &res); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkBatch100 sends batches of 100 calls and waits for all replies.
func BenchmarkBatch100(b *testing.B) {
	a, srv := Pipe(nil, &Options{Router: benchMux()})
	defer func() { a.Close(); <-a.Done(); <-srv.Done() }()
	results := make([]int, 100)
	elems := make([]BatchElem, 100)
	b.ReportAllocs()
	for b.Loop() {
		for i := range elems {
			elems[i] = BatchElem{Method: "add", Params: json.RawMessage(`[1,2]`), Result: &results[i]}
		}
		if err := a.Batch(context.Background(), elems); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRespondBatch100 measures the server side alone: decoding a
// batch of 100 calls, running them and encoding the replies.
func BenchmarkRespondBatch100(b *testing.B) {
	var sb strings.Builder
	sb.WriteByte('[')
	for i := range 100 {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`{"jsonrpc":"2.0","method":"add","params":[1,2],"id":` + strconv.Itoa(i) + `}`)
	}
	sb.WriteByte(']')
	body := []byte(sb.String())
	opts := &Options{Router: benchMux()}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if Respond(context.Background(), body, opts) == nil {
			b.Fatal("no reply")
		}
	}
}

// BenchmarkParse measures the envelope decoder on a typical request.
func BenchmarkParse(b *testing.B) {
	msg := []byte(`{"jsonrpc":"2.0","method":"subtract","params":{"minuend":42,"subtrahend":23},"id":"abc-123"}`)
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := parseFrame(nil, msg, 1000, DefaultMaxDepth); !ok {
			b.Fatal("parse failed")
		}
	}
}

// loopTransport feeds a Conn the same frame each time the benchmark asks
// for it, and tells the benchmark when a reply is written: the server's
// side of the load generator's round trips, without a network.
type loopTransport struct {
	frame   []byte
	in      chan struct{} // one frame to read
	written chan []byte   // what was written
	closed  chan struct{}
	once    sync.Once
}

func newLoopTransport(frame []byte) *loopTransport {
	return &loopTransport{frame: frame, in: make(chan struct{}), written: make(chan []byte, 1), closed: make(chan struct{})}
}

func (t *loopTransport) Read(ctx context.Context) ([]byte, error) {
	select {
	case <-t.in:
		// A fresh buffer, as a WebSocket's Read returns.
		return append([]byte(nil), t.frame...), nil
	case <-t.closed:
		return nil, &CloseError{Code: CloseNormal}
	}
}

func (t *loopTransport) Write(ctx context.Context, msg []byte) error {
	select {
	case t.written <- msg:
		return nil
	case <-t.closed:
		return &CloseError{Code: CloseNormal}
	}
}

func (t *loopTransport) Close(int, string) error {
	t.once.Do(func() { close(t.closed) })
	return nil
}

// batchFrame is a batch of n calls of method with params, ids 1 to n, as
// the load generator sends them.
func batchFrame(n int, method, params string) []byte {
	var sb strings.Builder
	sb.WriteByte('[')
	for i := range n {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`{"jsonrpc":"2.0","method":"` + method + `","params":` + params + `,"id":` + strconv.Itoa(i+1) + `}`)
	}
	sb.WriteByte(']')
	return []byte(sb.String())
}

// BenchmarkServeBatch100 measures a connection's serving side alone, as
// the hub runs it under the load generator's batch scenario: reading a
// batch of 100 echo calls, running them, and writing the reply array,
// with an OnServe hook set.
func BenchmarkServeBatch100(b *testing.B) {
	t := newLoopTransport(batchFrame(100, "echo", "[1]"))
	var served atomic.Int64
	c := NewConn(t, &Options{Router: benchMux(), OnServe: func(string, Code, time.Duration) { served.Add(1) }})
	done := make(chan error, 1)
	go func() { done <- c.Serve(context.Background()) }()
	defer func() { c.Close(); <-done }()
	b.SetBytes(int64(len(t.frame)))
	b.ReportAllocs()
	for b.Loop() {
		t.in <- struct{}{}
		if r := <-t.written; len(r) < 100*len(`{"jsonrpc":"2.0","id":1,"result":[1]}`) {
			b.Fatalf("short reply: %s", r)
		}
	}
}

// BenchmarkParseBatch100 measures the envelope decoder on the load
// generator's batch of 100 echo calls.
func BenchmarkParseBatch100(b *testing.B) {
	frame := batchFrame(100, "echo", "[1]")
	buf := make([]message, 0, 100)
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := parseFrame(buf, frame, 1000, DefaultMaxDepth); !ok {
			b.Fatal("parse failed")
		}
	}
}
