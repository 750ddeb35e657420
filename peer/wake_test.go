//go:build unix

package peer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/internal/transport"
)

// wakeTransport is a Transport whose Conn waits on the poll waker, as one
// the client package dialed does.
type wakeTransport struct{ Transport }

func (wakeTransport) Capabilities() transport.Caps { return transport.Caps{PollWake: true} }

// wakePair returns two Conns over a pipe, serving; those of wake wait on
// the poll waker.
func wakePair(t *testing.T, aOpts, bOpts *Options, wake ...bool) (a, b *Conn) {
	t.Helper()
	ta, tb := NewPipeTransport()
	if wake[0] {
		ta = wakeTransport{ta}
	}
	if wake[1] {
		tb = wakeTransport{tb}
	}
	a, b = NewConn(ta, aOpts), NewConn(tb, bOpts)
	go a.Serve(context.Background()) //nolint:errcheck // the result is in a.Err
	go b.Serve(context.Background()) //nolint:errcheck
	t.Cleanup(func() {
		a.Close()
		<-a.Done()
		<-b.Done()
	})
	return a, b
}

// wakePipe returns a pair whose side a makes its calls on the poll waker
// and b serves m, and checks that a has its pipe: on this system pipes can
// be polled, so the tests below would otherwise test the channel.
func wakePipe(t *testing.T, aOpts *Options, m *Mux) (a, b *Conn) {
	t.Helper()
	a, b = wakePair(t, aOpts, &Options{Router: m}, true, false)
	if a.wk == nil {
		t.Fatal("a transport that asks for the poll waker, but the connection has no pipe")
	}
	return a, b
}

// pipeEmpty reports whether a's pipe holds no id: every caller that
// gave up read the id of its delivered reply before letting go.
func pipeEmpty(t *testing.T, a *Conn) bool {
	t.Helper()
	rc, err := a.wk.r.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	for {
		// A caller that gave up may have left the pipe's deadline in the
		// past, or be about to (its ctx's AfterFunc runs on a goroutine of
		// its own): the raw read is then not tried, and is tried again.
		if err := a.wk.r.SetReadDeadline(time.Time{}); err != nil {
			t.Fatal(err)
		}
		var n int
		var rerr error
		err := rc.Read(func(fd uintptr) bool {
			var b [8]byte
			n, rerr = syscall.Read(int(fd), b[:])
			return true // do not wait: the pipe is non-blocking
		})
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			continue
		case err != nil:
			t.Fatal(err)
		}
		return n <= 0 && errors.Is(rerr, syscall.EAGAIN)
	}
}

func TestPollWakeCalls(t *testing.T) {
	m := NewMux()
	m.Handle("double", Func(func(_ context.Context, x []int) (int, error) { return 2 * x[0], nil }))
	a, _ := wakePipe(t, nil, m)
	for i := range 200 {
		var got int
		if err := a.Call(t.Context(), "double", []int{i}, &got); err != nil || got != 2*i {
			t.Fatalf("call %d: got %d, %v; want %d", i, got, err, 2*i)
		}
	}
	// Overlapping calls: one waits on the pipe at a time, the others on
	// their channels, and each gets its own reply.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 100 {
				x := g*1000 + i
				var got int
				if err := a.Call(t.Context(), "double", []int{x}, &got); err != nil || got != 2*x {
					errs <- fmt.Errorf("call %d: got %d, %v; want %d", x, got, err, 2*x)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if !pipeEmpty(t, a) {
		t.Error("ids left in the pipe")
	}
}

// TestPollWakeCancel checks that a caller waiting on the pipe returns
// when its ctx ends, and that the next caller waits as it should: the
// deadline that ended the wait does not end the next one.
func TestPollWakeCancel(t *testing.T) {
	m, started := waitMux()
	m.HandleFunc("quick", func(context.Context, *Request) (any, error) { return 7, nil })
	a, _ := wakePipe(t, nil, m)
	cancelWait(t, a, started)
	for range 3 {
		var got int
		if err := a.Call(t.Context(), "quick", nil, &got); err != nil || got != 7 {
			t.Fatalf("next call: got %d, %v; want 7", got, err)
		}
	}
	if !pipeEmpty(t, a) {
		t.Error("ids left in the pipe")
	}
}

func TestPollWakeTimeout(t *testing.T) {
	m, _ := waitMux()
	m.HandleFunc("quick", func(context.Context, *Request) (any, error) { return 7, nil })
	a, _ := wakePipe(t, &Options{CallTimeout: 20 * time.Millisecond}, m)
	if err := a.Call(context.Background(), "wait", nil, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want DeadlineExceeded", err)
	}
	// The next call has a deadline of its own: on a loaded machine, it
	// may take longer than CallTimeout.
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Wait)
	defer cancel()
	var got int
	if err := a.Call(ctx, "quick", nil, &got); err != nil || got != 7 {
		t.Fatalf("next call: got %d, %v; want 7", got, err)
	}
}

// TestPollWakeClose checks that a caller waiting on the pipe learns of
// the connection's close, and that the pipe is closed with it.
func TestPollWakeClose(t *testing.T) {
	m, started := waitMux()
	a, _ := wakePipe(t, nil, m)
	errc := make(chan error, 1)
	go func() { errc <- a.Call(context.Background(), "wait", nil, nil) }()
	<-started
	a.Close()
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Fatalf("Call returned %v, want ErrClosed", err)
	}
	// Closing a closed file says so: both ends were closed with the
	// connection.
	for _, f := range []*os.File{a.wk.r, a.wk.w} {
		if err := f.Close(); !errors.Is(err, os.ErrClosed) {
			t.Errorf("%s was still open after the connection closed (Close: %v)", f.Name(), err)
		}
	}
}

// TestPollWakeGiveUpAtDelivery races callers giving up against their
// replies coming: whichever wins, the caller returns having left no id in
// the pipe, and the next call gets its own reply.
func TestPollWakeGiveUpAtDelivery(t *testing.T) {
	m := NewMux()
	m.Handle("double", Func(func(_ context.Context, x []int) (int, error) { return 2 * x[0], nil }))
	a, _ := wakePipe(t, nil, m)
	gaveUp, answered := 0, 0
	for i := range 300 {
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			for range i % 50 { // give up at moments spread around the reply
				_ = ctx.Err()
			}
			cancel()
		}()
		var got int
		switch err := a.Call(ctx, "double", []int{i}, &got); {
		case err == nil && got == 2*i:
			answered++
		case errors.Is(err, context.Canceled):
			gaveUp++
		default:
			t.Fatalf("call %d: got %d, %v", i, got, err)
		}
		<-done
		if !pipeEmpty(t, a) {
			t.Fatalf("call %d left its id in the pipe", i)
		}
		if err := a.Call(t.Context(), "double", []int{-i}, &got); err != nil || got != -2*i {
			t.Fatalf("call after %d: got %d, %v; want %d", i, got, err, -2*i)
		}
	}
	t.Logf("%d answered, %d given up", answered, gaveUp)
}

// TestPollWakeCallFromHandler checks calls made with PollWake by a
// handler, on the reader, and calls back into that handler's side: the
// caller waiting on the pipe does not hold up the reading of its reply.
func TestPollWakeCallFromHandler(t *testing.T) {
	inner, outer := callbackMuxes()
	// a serves callback and calls back b's greet, through its pipe; b's
	// greet is called while b's own call waits, on its pipe too.
	a, b := wakePair(t, &Options{Router: outer}, &Options{Router: inner}, true, true)
	if a.wk == nil || b.wk == nil {
		t.Fatal("transports that ask for the poll waker, but a connection has no pipe")
	}
	for range 50 {
		var got string
		if err := b.Call(t.Context(), "callback", nil, &got); err != nil || got != "hello world" {
			t.Fatalf("got %q, %v", got, err)
		}
	}
}

// TestPollWakeSlowWakes checks that slow wakes in a row send the next
// calls to their channels, for skipCalls calls, and that a quick wake in
// between does not.
func TestPollWakeSlowWakes(t *testing.T) {
	w := newWaker()
	if w == nil {
		t.Fatal("no pipe")
	}
	defer w.close()
	slow := func() { w.sent.Store(monotime() - 2*int64(slowWake)); w.woke() }
	quick := func() { w.sent.Store(monotime()); w.woke() }
	slow()
	quick()
	slow()
	if !w.take() {
		t.Fatal("the pipe was refused after slow wakes not in a row")
	}
	w.give()
	slow()
	for i := range skipCalls {
		if w.take() {
			t.Fatalf("call %d after %d slow wakes in a row took the pipe, want its channel for %d calls", i, slowWakes, skipCalls)
		}
	}
	if !w.take() {
		t.Fatalf("the pipe was refused after %d calls on their channels", skipCalls)
	}
	w.give()
}
