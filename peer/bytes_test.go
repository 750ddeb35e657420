package peer

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

// feedTransport hands the reader the messages of in, one per Read, then
// waits; its writes complete only once open is closed, as with a peer
// that reads nothing until then.
type feedTransport struct {
	in      chan []byte
	open    chan struct{}
	closed  chan struct{}
	once    sync.Once
	written atomic.Int32
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
	case <-f.open:
		f.written.Add(1)
		return nil
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
// far below what was asked for (50 MiB here), and the shared budget
// counts them. The calls read meanwhile wait, holding no reply, and are
// all answered once the peer reads.
//
// The size of a reply is known only once it is made: the calls run at
// once reserve room for one of the size of the latest reply. A peer that
// sends small calls, then many large ones at once, has more of them made
// at once: docs/security.md gives that worst case.
func TestQueueBytesBackpressure(t *testing.T) {
	const (
		calls     = 50
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
	f := &feedTransport{in: make(chan []byte, calls), open: make(chan struct{}), closed: make(chan struct{})}
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
	testkit.WaitFor(t, "the first reply", func() bool { return budget.Queued() >= size })
	for i := 1; i < calls; i++ {
		call(i)
	}
	// The room for replies used up, and every call read or the reader
	// waiting for room: from now on no handler starts, as no write
	// completes.
	testkit.WaitFor(t, "the room to be used up", func() bool {
		return c.out.bytes.Load() >= maxQueued && (len(f.in) == 0 || c.paused.Load())
	})
	queued := budget.Queued()
	t.Logf("%d calls ran, %d bytes queued, %d calls left unread", ran.Load(), queued, len(f.in))
	if limit := int64(maxQueued + size); queued > limit {
		t.Fatalf("%d bytes queued, over %d", queued, limit)
	}
	if n := ran.Load(); n > maxQueued/size+1 {
		t.Fatalf("%d of %d calls ran while their replies were not read", n, calls)
	}
	// Once the peer reads, every call is answered.
	close(f.open)
	for deadline := time.Now().Add(60 * time.Second); f.written.Load() < calls; {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d replies written", f.written.Load(), calls)
		}
		time.Sleep(10 * time.Millisecond) // polling a count, with a deadline
	}
}

// An answer to a pending call that has neither result nor error fails
// that call at once, with an error that is not a *Error from the other
// side; the same message with an id of no pending call is an invalid
// request, answered -32600.
func TestAnswerWithoutResultOrError(t *testing.T) {
	p := newRawPeer(t, nil)
	done := make(chan error, 1)
	go func() { done <- p.c.Call(context.Background(), "m", nil, nil) }()
	var req struct{ ID json.RawMessage }
	if err := json.Unmarshal([]byte(p.read()), &req); err != nil {
		t.Fatal(err)
	}
	p.write(`{"jsonrpc":"2.0","id":` + string(req.ID) + `}`)
	select {
	case err := <-done:
		if _, remote := errors.AsType[*Error](err); err == nil || remote {
			t.Fatalf("Call: %v, want an invalid response", err)
		}
	case <-time.After(testkit.Wait):
		t.Fatal("the call still waits for its answer")
	}
	p.write(`{"jsonrpc":"2.0","id":99}`)
	if got := p.read(); got != `{"jsonrpc":"2.0","id":99,"error":{"code":-32600,"message":"Invalid Request"}}` {
		t.Fatalf("an answer to no call: %s", got)
	}
}
