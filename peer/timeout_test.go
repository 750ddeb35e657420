package peer

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

// callAsync makes a call on c from a goroutine and returns its outcome's
// channel; the test waits for it.
func callAsync(c *Conn, ctx context.Context, method string) <-chan error {
	errc := make(chan error, 1)
	go func() { errc <- c.Call(ctx, method, nil, nil) }()
	return errc
}

// requestID reads the next message p receives, a request for method, and
// returns its id.
func requestID(t *testing.T, p *rawPeer, method string) string {
	t.Helper()
	var req struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
	}
	msg := p.read()
	if err := json.Unmarshal([]byte(msg), &req); err != nil || req.Method != method {
		t.Fatalf("got %s, want a request for %s", msg, method)
	}
	return string(req.ID)
}

// assertCancel reads the next message p receives and checks that it is
// rpc.cancel for id.
func assertCancel(t *testing.T, p *rawPeer, id string) {
	t.Helper()
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","method":"rpc.cancel","params":{"id":`+id+`}}`, p.read())
}

// A call whose context never ends is bounded by CallTimeout through the
// connection's timer: it returns DeadlineExceeded and the other side is
// sent rpc.cancel. The late answer is dropped, and the next call gets its
// own answer.
func TestCallTimeoutByTimer(t *testing.T) {
	p := newRawPeer(t, &Options{CallTimeout: 30 * time.Millisecond})
	start := time.Now()
	errc := callAsync(p.c, context.Background(), "slow")
	id := requestID(t, p, "slow")
	assertCancel(t, p, id)
	if err := within(t, errc); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Call returned %v, want DeadlineExceeded", err)
	}
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Fatalf("Call timed out after %v, before its CallTimeout", d)
	}
	p.write(`{"jsonrpc":"2.0","result":"late","id":` + id + `}`)

	// The next call has a deadline of its own: on a loaded machine, its
	// round trip may take longer than CallTimeout.
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Wait)
	defer cancel()
	var got string
	done := make(chan error, 1)
	go func() { done <- p.c.Call(ctx, "next", nil, &got) }()
	next := requestID(t, p, "next")
	p.write(`{"jsonrpc":"2.0","result":"mine","id":` + next + `}`)
	if err := <-done; err != nil || got != "mine" {
		t.Fatalf("next call: %q, %v; want \"mine\"", got, err)
	}
}

// When the timer finds a call not yet due, it arms itself for that call:
// each call times out at its own deadline.
func TestCallTimeoutRearms(t *testing.T) {
	p := newRawPeer(t, &Options{CallTimeout: time.Hour})
	first := callAsync(p.c, context.Background(), "first")
	id1 := requestID(t, p, "first")
	second := callAsync(p.c, context.Background(), "second")
	id2 := requestID(t, p, "second")

	// Bring the deadlines forward: the first is due now, the second soon.
	n1, _ := parseOurID([]byte(id1))
	n2, _ := parseOurID([]byte(id2))
	p.c.mu.Lock()
	p1, p2 := p.c.pending[n1], p.c.pending[n2]
	if p1 == nil || p2 == nil {
		p.c.mu.Unlock()
		t.Fatalf("calls %s and %s not pending", id1, id2)
	}
	now := monotime()
	p1.deadline, p2.deadline = now, now+int64(50*time.Millisecond)
	p.c.mu.Unlock()
	p.c.expireCalls()

	if err := within(t, first); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("first call: %v, want DeadlineExceeded", err)
	}
	assertCancel(t, p, id1)
	if err := within(t, second); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second call: %v, want DeadlineExceeded", err)
	}
	assertCancel(t, p, id2)
	p.c.mu.Lock()
	defer p.c.mu.Unlock()
	if len(p.c.pending) != 0 || p.c.timeouts.at != 0 {
		t.Fatalf("after both timeouts: %d pending, timer armed for %d", len(p.c.pending), p.c.timeouts.at)
	}
}

// A call that cannot even be queued (the queue is full and the other side
// reads nothing) is bounded by CallTimeout too, or ends with its ctx, and
// is not cancelled at the other side, which never got it.
func TestCallTimeoutWhileQueued(t *testing.T) {
	cancellable, cancel := context.WithCancel(context.Background())
	defer cancel()
	cancelled, cancelNow := context.WithCancel(context.Background())
	defer cancelNow()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want error
	}{
		{"ctx that never ends", context.Background(), context.DeadlineExceeded},
		{"cancellable ctx", cancellable, context.DeadlineExceeded},
		{"ctx cancelled meanwhile", cancelled, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			timeout := 30 * time.Millisecond
			if tc.want == context.Canceled { //nolint:errorlint // the table's own value
				timeout = time.Hour
			}
			p := newRawPeer(t, &Options{CallTimeout: timeout, MaxQueue: 1})
			filled := fillQueue(t, p)
			errc := callAsync(p.c, tc.ctx, "slow")
			if tc.want == context.Canceled { //nolint:errorlint
				testkit.WaitFor(t, "the call to wait for room", func() bool {
					p.c.out.mu.Lock()
					defer p.c.out.mu.Unlock()
					return p.c.out.room != nil
				})
				cancelNow()
			}
			if err := within(t, errc); !errors.Is(err, tc.want) {
				t.Fatalf("Call returned %v, want %v", err, tc.want)
			}
			p.c.mu.Lock()
			pending := len(p.c.pending)
			p.c.mu.Unlock()
			if pending != 0 {
				t.Fatalf("%d calls pending after the call ended", pending)
			}
			for range 18 {
				if msg := p.read(); msg != `{"jsonrpc":"2.0","method":"fill"}` {
					t.Fatalf("got %s, want only the notifications", msg)
				}
			}
			if err := <-filled; err != nil {
				t.Fatal(err)
			}
		})
	}
}

// fillQueue sends notifications on p's Conn until a write blocks and the
// queue (MaxQueue 1) is full: 18 of them. The channel returned receives
// the outcome of the blocked one.
func fillQueue(t *testing.T, p *rawPeer) <-chan error {
	t.Helper()
	// The pipe holds 16 messages; the 17th write blocks, and one more
	// message fills the queue.
	filled := make(chan error, 1)
	go func() {
		for range 17 {
			if err := p.c.Notify(context.Background(), "fill", nil); err != nil {
				filled <- err
				return
			}
		}
		filled <- nil
	}()
	testkit.WaitFor(t, "a blocked write", func() bool {
		p.c.out.mu.Lock()
		defer p.c.out.mu.Unlock()
		return p.c.out.writing && len(p.c.out.queue) == 0 && p.c.out.written.Load() == 16
	})
	if err := p.c.Notify(context.Background(), "fill", nil); err != nil {
		t.Fatal(err)
	}
	return filled
}

// A call whose context can be cancelled but has no deadline gets
// CallTimeout too, and still sends rpc.cancel when its context ends first.
func TestCallTimeoutCancellable(t *testing.T) {
	p := newRawPeer(t, &Options{CallTimeout: 30 * time.Millisecond})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	errc := callAsync(p.c, ctx, "slow")
	assertCancel(t, p, requestID(t, p, "slow"))
	if err := within(t, errc); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Call returned %v, want DeadlineExceeded", err)
	}

	errc = callAsync(p.c, ctx, "slow")
	id := requestID(t, p, "slow")
	cancel()
	if err := within(t, errc); !errors.Is(err, context.Canceled) {
		t.Fatalf("Call returned %v, want Canceled", err)
	}
	assertCancel(t, p, id)
}

// within returns what errc receives, failing the test if nothing comes
// within testkit.Wait.
func within(t *testing.T, errc <-chan error) error {
	t.Helper()
	select {
	case err := <-errc:
		return err
	case <-time.After(testkit.Wait):
		t.Fatal("the call did not return")
		return nil
	}
}
