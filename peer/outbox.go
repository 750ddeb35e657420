package peer

import (
	"context"
	"sync"
)

// readerQueueFactor bounds the messages the reader queues without waiting:
// it queues its immediate replies (errors, rpc.ping, inline results) even
// when MaxQueue messages wait, since it must never block, but once
// readerQueueFactor × MaxQueue wait, the other side sends and does not
// read, and it is closed as too slow.
const readerQueueFactor = 2

// outbox is the outbound path of a Conn: a bounded queue of encoded
// messages and the one goroutine at a time that writes them.
//
// A sender that finds no one writing writes its own message at once, on
// its own goroutine (no hand-off); messages queued meanwhile go to a
// writer goroutine, started on the connection's workers, that ends when
// the queue is empty. Writes are bounded by the connection's lifetime,
// never by a caller's context: a transport may close the connection when
// a write's context ends.
type outbox struct {
	t       Transport
	ctx     context.Context // bounds writes; ends when the connection closes
	limit   int             // MaxQueue
	spawn   func(func())    // runs a writer on a worker goroutine
	fail    func(error)     // closes the connection after a failed write
	drained func()          // called each time the writer stops with nothing queued

	mu      sync.Mutex
	closed  bool
	cause   error // returned to senders once closed
	queue   []outMsg
	spare   []outMsg      // the last written batch's array, for reuse
	writing bool          // a goroutine is writing the queue
	posted  int           // messages in queue that came through postEvent
	room    chan struct{} // closed when the queue has room again
}

type outMsg struct {
	b    []byte
	post bool // came through postEvent
}

// post queues b without waiting, for the reader. It fails with ErrTooSlow
// when readerQueueFactor × limit messages wait already: the caller closes
// the connection.
func (o *outbox) post(b []byte) error {
	o.mu.Lock()
	if !o.closed && len(o.queue) >= readerQueueFactor*o.limit {
		o.mu.Unlock()
		return ErrTooSlow
	}
	o.enqueueLocked(b, false, false)
	return nil
}

// postEvent queues b without waiting, for [Conn.Post]. It fails with
// ErrTooSlow when limit posted messages wait already, and with the close
// cause once closed.
func (o *outbox) postEvent(b []byte) error {
	o.mu.Lock()
	if o.closed {
		err := o.cause
		o.mu.Unlock()
		return err
	}
	if o.posted >= o.limit {
		o.mu.Unlock()
		return ErrTooSlow
	}
	o.posted++
	o.enqueueLocked(b, true, false)
	return nil
}

// send queues b, waiting while limit messages wait. If no one is writing,
// the calling goroutine writes b itself, then hands whatever was queued
// meanwhile to a writer goroutine. It runs on a caller's goroutine (Call,
// Notify, Batch, Progress) or a handler's worker (replies).
func (o *outbox) send(ctx context.Context, b []byte) error {
	o.mu.Lock()
	for !o.closed && len(o.queue) >= o.limit {
		if o.room == nil {
			o.room = make(chan struct{})
		}
		room := o.room
		o.mu.Unlock()
		select {
		case <-room:
		case <-ctx.Done():
			return ctx.Err()
		}
		o.mu.Lock()
	}
	if o.closed {
		err := o.cause
		o.mu.Unlock()
		return err
	}
	o.enqueueLocked(b, false, true)
	return nil
}

// enqueueLocked appends to the queue and makes sure someone writes it:
// the caller itself when inline, else a writer goroutine. It is called
// with o.mu held and releases it.
func (o *outbox) enqueueLocked(b []byte, post, inline bool) {
	if o.closed {
		o.mu.Unlock()
		return
	}
	o.queue = append(o.queue, outMsg{b: b, post: post})
	if o.writing {
		o.mu.Unlock()
		return
	}
	o.writing = true
	if inline {
		o.mu.Unlock()
		o.write(true)
		return
	}
	// Spawned under o.mu, while open: close, which the connection calls
	// before it waits for its goroutines, cannot have happened yet.
	o.spawn(o.writeQueued)
	o.mu.Unlock()
}

// write drains the queue; the caller has set o.writing. An inline writer
// (a sender) writes what is queued now and hands the rest to a writer
// goroutine, so that no caller writes other goroutines' messages for long.
func (o *outbox) write(inline bool) {
	for {
		o.mu.Lock()
		if o.closed || len(o.queue) == 0 {
			o.writing = false
			o.mu.Unlock()
			o.drained()
			return
		}
		batch := o.queue
		o.queue, o.spare = o.spare[:0], nil
		for _, m := range batch {
			if m.post {
				o.posted--
			}
		}
		if o.room != nil {
			close(o.room)
			o.room = nil
		}
		o.mu.Unlock()

		for i, m := range batch {
			if err := o.t.Write(o.ctx, m.b); err != nil {
				o.fail(err)
				return
			}
			batch[i] = outMsg{}
		}

		o.mu.Lock()
		if o.spare == nil {
			o.spare = batch[:0]
		}
		if inline && !o.closed && len(o.queue) > 0 {
			o.spawn(o.writeQueued)
			o.mu.Unlock()
			return
		}
		o.mu.Unlock()
	}
}

// writeQueued is the task of a writer goroutine.
func (o *outbox) writeQueued() { o.write(false) }

// idle reports whether nothing is queued or being written.
func (o *outbox) idle() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.queue) == 0 && !o.writing
}

// close drops what is queued and fails every sender, waiting or to come,
// with cause. A write in progress is ended by the connection's context.
func (o *outbox) close(cause error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return
	}
	o.closed = true
	o.cause = cause
	o.queue = nil
	if o.room != nil {
		close(o.room)
		o.room = nil
	}
}
