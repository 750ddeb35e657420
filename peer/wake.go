package peer

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"sync/atomic"
	"time"
)

// This file holds the poll waker of a Conn over a transport that asks
// for it (Caps.PollWake): a WebSocket the client package dialed.
//
// A caller waiting on a channel for its reply is handed the reply by the
// reader goroutine, and readying a goroutine makes Go's scheduler wake an
// idle thread to run it, on another core: for calls made one after
// another, a futex wake, an inter-processor interrupt and a thread that
// spins and sleeps again, per call. On a 2-core machine, that has cost
// from a sixth to over a third of the calls per second that a goroutine
// reading its own replies makes. A goroutine that waits on a file the runtime polls is readied by
// the poller instead: the thread that read the reply, once the reader
// parks for its next read, finds the caller runnable when it polls, and
// runs it, with no other thread woken.
//
// So a connection keeps one pipe, and one caller at a time (the first to
// take it) waits by reading the pipe: whoever delivers its reply sends it
// on the call's channel as for any call (which readies no one: nobody
// waits on it) and then writes the call's id to the pipe. The caller reads
// ids until its own, then takes the reply from the channel. A caller that
// gives up after its reply was taken for delivery reads its id before it
// lets go of the pipe, so the pipe holds no id but the current waiter's.
//
// The poller is asked only when a core runs out of goroutines to run, or
// every 10 ms by the runtime's monitor. In a process that keeps every core
// busy, a caller woken through it would wait for that, where a caller on a
// channel runs as soon as the reader parks. So the waiter measures each
// wake, and after slowWakes slow ones in a row, the next skipCalls calls
// wait on their channels; then the pipe is tried again.

// waker is a connection's pipe and the caller waiting on it.
type waker struct {
	r, w *os.File
	busy atomic.Bool  // a caller holds the pipe
	sent atomic.Int64 // when the last id was written (monotime)
	skip atomic.Int64 // calls left that wait on their channels
	slow int          // the holder's: slow wakes in a row
	buf  [8]byte      // the holder's, to read an id into
	// interruptFn is interrupt as a func value, made once: a method
	// value made per wait would be an allocation per call.
	interruptFn func()
}

// newWaker returns a waker, or nil where pipes cannot be polled (the
// caller's goroutine would then block a thread in every read).
func newWaker() *waker {
	r, w, err := os.Pipe()
	if err != nil {
		return nil
	}
	if r.SetReadDeadline(time.Time{}) != nil || w.SetWriteDeadline(time.Time{}) != nil {
		_ = r.Close()
		_ = w.Close()
		return nil
	}
	wk := &waker{r: r, w: w}
	wk.interruptFn = wk.interrupt
	return wk
}

const (
	// slowWake is a wake slower than any the poller makes on a process
	// with a core to spare (5 to 20 µs).
	slowWake = 500 * time.Microsecond
	// slowWakes slow wakes in a row make skipCalls calls wait on their
	// channels.
	slowWakes = 2
	skipCalls = 1000
)

// take reports whether the caller got the pipe; it must then give it
// back with give.
func (w *waker) take() bool {
	if w.skip.Load() > 0 {
		w.skip.Add(-1) // racy, and need not be exact
		return false
	}
	return w.busy.CompareAndSwap(false, true)
}

// woke is told by the holder that it read its id: how long after the
// write it woke.
func (w *waker) woke() {
	if monotime()-w.sent.Load() < int64(slowWake) {
		w.slow = 0
		return
	}
	if w.slow++; w.slow >= slowWakes {
		w.slow = 0
		w.skip.Store(skipCalls)
	}
}

func (w *waker) give() { w.busy.Store(false) }

// notify tells the waiting caller that the reply of call id is on its
// channel. A write fails only once the pipe is closed, with the
// connection: the caller then takes its reply from the channel anyway.
func (w *waker) notify(id uint64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], id)
	w.sent.Store(monotime())
	_, _ = w.w.Write(b[:])
}

// wait waits for call id's notification and returns nil, or ctx's error
// if ctx ends first, or the pipe's once it is closed.
func (w *waker) wait(ctx context.Context, id uint64) error {
	if ctx.Done() != nil {
		stop := context.AfterFunc(ctx, w.interruptFn)
		// If it ran, the deadline it set in the past is undone by the
		// next wait, which finds it there.
		defer stop()
	}
	err := w.read(ctx, id)
	if err == nil {
		w.woke()
	}
	return err
}

// drain reads call id's notification, which is sure to come: its reply
// has been taken for delivery. It returns early only once the pipe is
// closed.
func (w *waker) drain(id uint64) { _ = w.read(context.Background(), id) }

// read reads ids until id. An expired deadline is interrupt's: for ctx,
// or for a call that waited before and gave up.
func (w *waker) read(ctx context.Context, id uint64) error {
	for {
		n, err := w.r.Read(w.buf[:])
		switch {
		case err == nil && n == len(w.buf):
			if binary.LittleEndian.Uint64(w.buf[:]) == id {
				return nil
			}
		case errors.Is(err, os.ErrDeadlineExceeded):
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := w.r.SetReadDeadline(time.Time{}); err != nil {
				return err
			}
		case err != nil:
			return err
		default:
			return errors.New("peer: short read from the wake pipe")
		}
	}
}

// interrupt ends the read of the caller whose ctx ended.
func (w *waker) interrupt() { _ = w.r.SetReadDeadline(time.Unix(1, 0)) }

// close closes the pipe, once the connection has failed every pending
// call: a caller still reading it then gets an error, and its reply from
// the channel.
func (w *waker) close() {
	_ = w.r.Close()
	_ = w.w.Close()
}
