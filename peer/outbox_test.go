package peer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

// gatedTransport records what is written to it; each Write first takes a
// token from gate, so a test decides when writes make progress.
type gatedTransport struct {
	gate chan struct{}

	mu      sync.Mutex
	written []string
}

func (g *gatedTransport) Read(ctx context.Context) ([]byte, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (g *gatedTransport) Write(ctx context.Context, msg []byte) error {
	select {
	case <-g.gate:
	case <-ctx.Done():
		return ctx.Err()
	}
	g.mu.Lock()
	g.written = append(g.written, string(msg))
	g.mu.Unlock()
	return nil
}

func (g *gatedTransport) Close(int, string) error { return nil }

func (g *gatedTransport) messages() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.written...)
}

// newTestOutbox returns an outbox of the given limit over g, whose writer
// goroutines the test waits for.
func newTestOutbox(t *testing.T, g *gatedTransport, limit int) *outbox {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	return &outbox{
		t:     g,
		ctx:   ctx,
		limit: limit,
		maxB:  1 << 30,
		wg:    &wg,
		fail: func(err error) {
			if ctx.Err() == nil { // not the cleanup's doing
				t.Errorf("write failed: %v", err)
			}
		},
		drained: func() {},
		pause:   func(bool) {},
	}
}

// A sender that finds no one writing writes its message itself, before
// send returns: no hand-off to another goroutine.
func TestOutboxIdleSenderWritesInline(t *testing.T) {
	g := &gatedTransport{gate: make(chan struct{}, 1)}
	o := newTestOutbox(t, g, 4)
	g.gate <- struct{}{}
	if err := o.send(t.Context(), []byte("one"), false); err != nil {
		t.Fatal(err)
	}
	if got := g.messages(); len(got) != 1 || got[0] != "one" {
		t.Fatalf("written when send returned: %q", got)
	}
	if !o.idle() {
		t.Fatal("outbox not idle after its only message was written")
	}
}

// waitWriting waits until a writer has taken everything queued and is
// blocked in the transport's Write.
func waitWriting(t *testing.T, o *outbox) {
	t.Helper()
	testkit.WaitFor(t, "a writer to take the queue", func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		return o.writing && len(o.queue) == 0
	})
}

// Senders wait while limit messages are queued; every message is written,
// in the order it was queued.
func TestOutboxSendersWaitForRoom(t *testing.T) {
	g := &gatedTransport{gate: make(chan struct{})}
	o := newTestOutbox(t, g, 2)
	var senders sync.WaitGroup
	senders.Go(func() { _ = o.send(t.Context(), []byte("0"), false) }) // writes inline
	waitWriting(t, o)
	for _, m := range []string{"1", "2"} { // the queue is full now
		if err := o.send(t.Context(), []byte(m), false); err != nil {
			t.Fatal(err)
		}
	}
	senders.Go(func() {
		if err := o.send(t.Context(), []byte("3"), false); err != nil {
			t.Error(err)
		}
	})
	testkit.WaitFor(t, "the last sender to wait for room", func() bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		return o.room != nil
	})
	for range 4 {
		g.gate <- struct{}{}
	}
	senders.Wait()
	testkit.WaitFor(t, "the queue to drain", o.idle)
	if got := fmt.Sprint(g.messages()); got != "[0 1 2 3]" {
		t.Fatalf("written: %s", got)
	}
}

// Posted events do not wait: at limit posted events, postEvent refuses
// with ErrTooSlow. The reader's replies wait for room like any sender's,
// telling the connection that the reader waits.
func TestOutboxThresholds(t *testing.T) {
	g := &gatedTransport{gate: make(chan struct{})}
	o := newTestOutbox(t, g, 3)
	var waits []bool
	var wmu sync.Mutex
	o.pause = func(w bool) {
		wmu.Lock()
		waits = append(waits, w)
		wmu.Unlock()
	}
	if err := o.add([]byte("reply")); err != nil {
		t.Fatal(err)
	}
	waitWriting(t, o)
	for i := range 3 {
		if err := o.postEvent([]byte("event"), nil); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
	}
	if err := o.postEvent([]byte("event"), nil); err != ErrTooSlow { //nolint:errorlint // returned bare
		t.Fatalf("event over the limit: %v, want ErrTooSlow", err)
	}
	// The queue is full: the reader's next reply waits for room.
	added := make(chan error, 1)
	go func() { added <- o.add([]byte("reply")) }()
	testkit.WaitFor(t, "the reader to wait for room", func() bool {
		wmu.Lock()
		defer wmu.Unlock()
		return len(waits) == 1 && waits[0]
	})
	g.gate <- struct{}{} // the first reply is written; the writer takes the events
	if err := <-added; err != nil {
		t.Fatal(err)
	}
	// Once written, posted events make room for more.
	for range 4 {
		g.gate <- struct{}{}
	}
	testkit.WaitFor(t, "the queue to drain", o.idle)
	if err := o.postEvent([]byte("event"), nil); err != nil {
		t.Fatalf("event after the queue drained: %v", err)
	}
	g.gate <- struct{}{}
	testkit.WaitFor(t, "the queue to drain", o.idle)
	wmu.Lock()
	defer wmu.Unlock()
	if fmt.Sprint(waits) != "[true false]" {
		t.Fatalf("reader waits reported as %v", waits)
	}
	if got := len(g.messages()); got != 6 {
		t.Fatalf("%d messages written, want 6", got)
	}
}

// A write that makes no progress for stall closes the connection; one
// that makes progress, however slowly, does not.
func TestOutboxWriteStall(t *testing.T) {
	const stall = 100 * time.Millisecond
	g := &gatedTransport{gate: make(chan struct{})}
	o := newTestOutbox(t, g, 100)
	failed := make(chan error, 1)
	o.fail = func(err error) {
		select {
		case failed <- err:
		default: // the first is enough
		}
	}
	// Slow but steady: a write between any two checks of the watchdog,
	// run here by hand (its timer is due in half an hour), so that a
	// loaded machine's delays cannot look like a stall.
	o.stall = time.Hour
	for range 16 {
		if err := o.add([]byte("m")); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 16 {
		o.check() // a write pending, and none done since the last check
		g.gate <- struct{}{}
		testkit.WaitFor(t, "the write", func() bool { return o.written.Load() == uint64(i+1) })
		o.check()
	}
	testkit.WaitFor(t, "the queue to drain", o.idle)
	o.check() // disarms the watchdog: nothing is being written
	select {
	case err := <-failed:
		t.Fatalf("slow writes closed the connection: %v", err)
	default:
	}
	// Stuck, with the watchdog on its timer.
	o.mu.Lock()
	o.stall = stall
	o.mu.Unlock()
	start := time.Now()
	if err := o.add([]byte("stuck")); err != nil {
		t.Fatal(err)
	}
	err := testkit.Recv(t, failed, "the stalled write to close the connection")
	if elapsed := time.Since(start); !errors.Is(err, ErrTooSlow) || elapsed < stall {
		t.Fatalf("after %v: %v, want ErrTooSlow after %v", elapsed, err, stall)
	}
	o.close(err)
}

// Closing fails the senders waiting for room, and every later one, with
// the cause, and drops what was queued.
func TestOutboxCloseFailsSenders(t *testing.T) {
	g := &gatedTransport{gate: make(chan struct{})}
	o := newTestOutbox(t, g, 1)
	if err := o.add([]byte("stuck")); err != nil { // its write blocks until cleanup
		t.Fatal(err)
	}
	waitWriting(t, o)
	if err := o.add([]byte("queued")); err != nil {
		t.Fatal(err)
	}
	waiting := make(chan error, 1)
	go func() { waiting <- o.send(context.Background(), []byte("waits"), false) }()
	cause := errors.New("the cause")
	o.close(cause)
	if err := <-waiting; err != cause { //nolint:errorlint // the cause itself
		t.Fatalf("waiting sender: %v", err)
	}
	if err := o.send(t.Context(), []byte("late"), false); err != cause { //nolint:errorlint // the cause itself
		t.Fatalf("later sender: %v", err)
	}
	if err := o.postEvent([]byte("late"), nil); err != cause { //nolint:errorlint // the cause itself
		t.Fatalf("later event: %v", err)
	}
	o.mu.Lock()
	queued := len(o.queue)
	o.mu.Unlock()
	if queued != 0 {
		t.Fatalf("%d messages still queued after close", queued)
	}
}

// While the reader holds the queue, replies wait, and leave together
// when it lets go; a message that is not a reply (a handler's call to the
// other side) goes out at once, with the replies before it, in order; and
// a held queue is written once it reaches holdMax.
func TestOutboxHoldWrites(t *testing.T) {
	g := &gatedTransport{gate: make(chan struct{}, 16)}
	o := newTestOutbox(t, g, 8) // holdMax 4
	for range 16 {
		g.gate <- struct{}{}
	}
	o.holdWrites(true)
	for _, m := range []string{"r1", "r2"} {
		if err := o.send(t.Context(), []byte(m), true); err != nil {
			t.Fatal(err)
		}
	}
	if got := g.messages(); len(got) != 0 || o.idle() {
		t.Fatalf("held replies written (%q) or dropped (idle %v)", got, o.idle())
	}
	if err := o.send(t.Context(), []byte("call"), false); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(g.messages()); got != "[r1 r2 call]" {
		t.Fatalf("written when the call was sent: %s", got)
	}

	o.add([]byte("r3"))
	if got := len(g.messages()); got != 3 {
		t.Fatalf("a held reply was written: %d messages", got)
	}
	o.holdWrites(false)
	if got := fmt.Sprint(g.messages()); got != "[r1 r2 call r3]" {
		t.Fatalf("written once the hold ended: %s", got)
	}

	o.holdWrites(true)
	for _, m := range []string{"a", "b", "c", "d"} {
		if err := o.send(t.Context(), []byte(m), true); err != nil {
			t.Fatal(err)
		}
	}
	if got := fmt.Sprint(g.messages()); got != "[r1 r2 call r3 a b c d]" {
		t.Fatalf("written with holdMax queued: %s", got)
	}
	o.holdWrites(false)
	if !o.idle() {
		t.Fatal("outbox not idle")
	}
}
