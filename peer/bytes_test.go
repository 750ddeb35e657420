package peer

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// feedTransport hands the reader the messages of in, one per Read, then
// waits; its writes never complete, as with a peer that reads nothing.
type feedTransport struct {
	in     chan []byte
	closed chan struct{}
	once   sync.Once
}

func (f *feedTransport) Read(ctx context.Context) ([]byte, error) {
	select {
	case m := <-f.in:
		return m, nil
	case <-f.closed:
		return nil, ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (f *feedTransport) Write(ctx context.Context, _ []byte) error {
	select {
	case <-f.closed:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (f *feedTransport) Close(int, string) error {
	f.once.Do(func() { close(f.closed) })
	return nil
}

// A peer that pipelines calls with large results and reads nothing is
// slowed down in bytes, not only in messages: no more calls run than
// their replies fit in MaxQueueBytes, so the replies held stay near it,
// far below what was asked for (100 MiB here), and the shared budget
// counts them. The calls read meanwhile wait, holding no reply.
//
// The size of a reply is known only once it is made: the calls run at
// once reserve room for one of the size of the latest reply. A peer that
// sends small calls, then many large ones at once, has more of them made
// at once: docs/security.md gives that worst case.
func TestQueueBytesBackpressure(t *testing.T) {
	const (
		calls     = 100
		size      = 1 << 20
		maxQueued = 4 << 20
	)
	result := json.RawMessage(`"` + strings.Repeat("x", size-2) + `"`)
	var ran atomic.Int32
	mux := NewMux()
	mux.Handle("big", Func(func(context.Context, struct{}) (json.RawMessage, error) {
		ran.Add(1)
		return result, nil
	}))
	f := &feedTransport{in: make(chan []byte, calls), closed: make(chan struct{})}
	call := func(i int) { f.in <- []byte(`{"jsonrpc":"2.0","method":"big","id":` + strconv.Itoa(i) + `}`) }
	budget := NewBudget(0)
	c := NewConn(f, &Options{Router: mux, MaxQueueBytes: maxQueued, QueueBudget: budget, WriteStall: -1})
	var wg sync.WaitGroup
	wg.Go(func() { _ = c.Serve(context.Background()) })
	defer wg.Wait()
	defer c.Close()
	// The size of the replies is learnt from the first (see
	// outbox.reserve), then the rest come at once.
	call(0)
	waitFor(t, "the first reply", func() bool { return budget.Queued() >= size })
	for i := 1; i < calls; i++ {
		call(i)
	}
	// Every call read, and room for replies used up: from now on no
	// handler starts, as no write completes.
	waitFor(t, "the calls to be read and the room to be used up", func() bool {
		return len(f.in) == 0 && c.out.bytes.Load() >= maxQueued
	})
	queued := budget.Queued()
	t.Logf("%d calls ran, %d bytes queued, %d calls left unread", ran.Load(), queued, len(f.in))
	if limit := int64(maxQueued + size); queued > limit {
		t.Fatalf("%d bytes queued, over %d", queued, limit)
	}
	if n := ran.Load(); n > maxQueued/size+1 {
		t.Fatalf("%d of %d calls ran while their replies were not read", n, calls)
	}
}
