package peer

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-rpc/switchboard/internal/transport"
)

// outbox is the outbound path of a Conn: a bounded queue of encoded
// messages and the one goroutine at a time that writes them.
//
// A sender that finds no one writing writes its own message at once, on
// its own goroutine (no hand-off); messages queued meanwhile go to a
// writer goroutine of its own, that ends when the queue is empty. Writes are bounded by the connection's lifetime,
// never by a caller's context: a transport may close the connection when
// a write's context ends.
//
// Replies, calls and notifications wait for room, so that a peer that
// reads slowly slows down what it is sent, and what it sends us: the
// reader waits for room for its own replies, and reads nothing meanwhile.
// Events (postEvent) never wait: a peer with limit of them queued, or
// maxBytes of anything, is too slow for them. A watchdog closes the
// connection once writes have made no progress for stall: the other side
// does not read at all.
//
// Room is counted in messages and in bytes: one message can be a
// megabyte, so a bound in messages alone is no bound on memory. A message
// counts from when it is queued until it is written. There is room for
// one more message when fewer than limit are queued and either nothing is
// queued (a message larger than maxBytes goes out alone) or fewer than
// maxBytes bytes are, and the budget shared with the other connections,
// if any, is not spent.
type outbox struct {
	t         Transport
	gather    *transport.Conn      // where t writes, when it can gather writes; else nil
	writePing func(p []byte) error // t's, when it writes its own pings (pushPing)
	ctx       context.Context      // bounds writes; ends when the connection closes
	limit     int                  // MaxQueue
	maxB      int64                // MaxQueueBytes
	budget    *Budget              // QueueBudget; nil: none
	stall     time.Duration        // WriteStall; 0: no watchdog
	wg        *sync.WaitGroup      // the connection's: counts the writer goroutine
	fail      func(error)          // closes the connection after a failed or stalled write
	drained   func()               // called each time the writer stops with nothing queued
	pause     func(bool)           // told when the reader starts and stops waiting for room

	written atomic.Uint64 // messages written, for the watchdog
	bytes   atomic.Int64  // bytes queued or being written, or reserved; changed with mu held
	lastRep atomic.Int64  // the size of the latest reply queued, what reserve reserves

	mu      sync.Mutex // after Conn.mu, before workers.mu (see Conn.mu)
	closed  bool
	cause   error // returned to senders once closed
	queue   []outMsg
	spare   []outMsg      // the last written batch's array, for reuse
	writing bool          // a goroutine is writing the queue
	holding bool          // the reader holds the queue back (holdWrites)
	posted  int           // messages in queue that came through postEvent
	room    chan struct{} // closed when the queue has room again

	watchdog *time.Timer // runs check while armed
	armed    bool
	seen     uint64 // written at the last check
	strikes  int    // checks in a row that saw a write pending and none done
}

type outMsg struct {
	b  []byte
	sh *Shared // b is shared with other queues (or pingFrame); nil: b is this queue's own
}

// pingFrame marks a ping in the queue (pushPing): its b is the payload,
// for the transport's writePing. Released like a shared message once
// written, it is never held, so its count only goes down, and it has no
// budget to give anything back to.
var pingFrame = new(Shared)

// add queues b, waiting while limit messages are queued, and leaves the
// writing to a writer goroutine. It runs on the reader, which reads
// nothing more from the other side while it waits: that is the
// backpressure on a peer that sends and does not read. It fails only when
// the connection has closed.
func (o *outbox) add(b []byte) error {
	o.mu.Lock()
	if err := o.waitRoomLocked(nil, o.pause, 0); err != nil {
		o.mu.Unlock()
		return err
	}
	o.enqueueLocked(b, nil, qHold)
	return nil
}

// push queues b without waiting or counting against limit. It is for the
// few messages that must go out now and whose number is bounded
// otherwise: rpc.cancel for a call its caller gave up on.
func (o *outbox) push(b []byte) {
	o.mu.Lock()
	o.enqueueLocked(b, nil, 0)
}

// offer queues b, as push does, unless there is no room for it (see
// roomLocked): then it returns errNoRoom, and once closed the close
// cause. It is for a message that must not wait on the goroutine that has
// it (Relay's answer, on the reader of another connection; ForwardFunc's
// call).
func (o *outbox) offer(b []byte) error {
	o.mu.Lock()
	switch {
	case o.closed:
		err := o.cause
		o.mu.Unlock()
		return err
	case !o.roomLocked(0):
		o.mu.Unlock()
		return errNoRoom
	}
	o.enqueueLocked(b, nil, 0)
	return nil
}

// pushPing queues a ping with payload p, written by the transport
// (writePing) when the writer reaches it: behind what is queued, never
// in the middle of a message. Like push, it does not wait.
func (o *outbox) pushPing(p []byte) {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return
	}
	o.queue = append(o.queue, outMsg{b: p, sh: pingFrame})
	o.bytes.Add(int64(len(p)))
	if o.writing {
		o.mu.Unlock()
		return
	}
	o.writing = true
	o.armLocked()
	o.spawnWriterLocked()
	o.mu.Unlock()
}

// postEvent queues b, or sh's bytes when sh is not nil, without waiting,
// for [Conn.Post] and [Conn.PostShared]. It fails with ErrTooSlow when
// limit posted messages wait already, and with the close cause once
// closed.
func (o *outbox) postEvent(b []byte, sh *Shared) error {
	o.mu.Lock()
	if o.closed {
		err := o.cause
		o.mu.Unlock()
		return err
	}
	if o.posted >= o.limit || o.bytes.Load() >= o.maxB {
		o.mu.Unlock()
		return ErrTooSlow
	}
	o.posted++
	o.enqueueLocked(b, sh, qPost|qHold)
	return nil
}

// send queues b, waiting while limit messages are queued or until ctx
// ends. If no one is writing, the calling goroutine writes b itself, then
// hands whatever was queued meanwhile to a writer goroutine. It runs on a
// caller's goroutine (Call, Notify, Batch, Progress) or a handler's worker
// (replies). A reply may wait while the reader holds the queue
// (holdWrites); anything else goes out at once, with what is held: a
// handler's call to the other side must not wait for the reader.
func (o *outbox) send(ctx context.Context, b []byte, reply bool) error {
	return o.sendReserved(ctx, b, nil, reply, 0)
}

// sendReserved is send for a reply whose call reserved own bytes
// (reserve): the reservation is not counted against its own room, and
// gives way to the reply once it is queued, or is given back if it is not.
// With sh not nil, b is sh's bytes (see Shared).
func (o *outbox) sendReserved(ctx context.Context, b []byte, sh *Shared, reply bool, own int64) error {
	o.mu.Lock()
	var done <-chan struct{}
	if !o.roomLocked(own) {
		done = ctx.Done() // only when it must wait: a Call's is made then
	}
	err := o.waitRoomLocked(done, nil, own)
	o.bytes.Add(-own)
	if err != nil {
		o.mu.Unlock()
		if err == errNoRoom { //nolint:errorlint // our own sentinel
			return ctx.Err()
		}
		return err
	}
	q := qInline
	if reply {
		q |= qHold
	}
	o.enqueueLocked(b, sh, q)
	return nil
}

var errNoRoom = errors.New("peer: no room") // waitRoomLocked: done was closed first

// full reports whether there is no room for another message, in bytes:
// the reader then takes no new call until there is. It takes no lock:
// the reader asks it before each call.
func (o *outbox) full() bool { return o.fullBut(0) }

// fullBut is full, leaving out own bytes reserved by the caller.
func (o *outbox) fullBut(own int64) bool {
	b := o.bytes.Load() - own
	return b > 0 && (b >= o.maxB || o.budget.spent())
}

// roomLocked reports whether there is room for another message, leaving
// out own bytes reserved by the caller.
func (o *outbox) roomLocked(own int64) bool { return len(o.queue) < o.limit && !o.fullBut(own) }

// waitRoom waits until there is room for another message, or the outbox
// closes (its cause). It runs on the reader, telling pause.
func (o *outbox) waitRoom() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.waitRoomLocked(nil, o.pause, 0)
}

// reserve waits for room, then counts as queued the size of the latest
// reply, for a call about to run on a worker, and returns what it
// reserved, for sendReserved to queue the call's reply in its place (or
// unreserve, when there is no reply). The reader
// takes calls much faster than workers make their replies: without it, a
// peer that pipelines calls with large results and reads none would have
// them all made at once before the first was counted. With it, the
// replies being made count too, so that no more are made at once than
// fit in the queue, and the reader waits for room meanwhile.
func (o *outbox) reserve() int64 {
	n := o.lastRep.Load()
	o.mu.Lock()
	_ = o.waitRoomLocked(nil, nil, 0) // once closed, the reply goes nowhere
	o.bytes.Add(n)
	o.mu.Unlock()
	return n
}

// unreserve gives back what reserve reserved.
func (o *outbox) unreserve(n int64) {
	if n == 0 {
		return
	}
	o.mu.Lock()
	o.bytes.Add(-n)
	if o.room != nil {
		close(o.room)
		o.room = nil
	}
	o.mu.Unlock()
}

// waitRoomLocked waits, with o.mu held, until there is room for another
// message, the outbox closes (its cause), or done is closed (errNoRoom);
// own bytes reserved by the caller do not count. pause, if not nil, is
// told when the wait starts and ends.
func (o *outbox) waitRoomLocked(done <-chan struct{}, pause func(bool), own int64) error {
	for !o.closed && !o.roomLocked(own) {
		if !o.writing && len(o.queue) > 0 {
			// Held back by the reader (holdWrites) while the budget
			// shared with other connections ran out: written now, or the
			// wait would be for ever.
			o.writing = true
			o.armLocked()
			o.spawnWriterLocked()
		}
		if o.room == nil {
			o.room = make(chan struct{})
		}
		room := o.room
		o.mu.Unlock()
		if pause != nil {
			pause(true)
		}
		select {
		case <-room:
		case <-done:
			o.mu.Lock()
			return errNoRoom
		}
		if pause != nil {
			pause(false)
		}
		o.mu.Lock()
	}
	if o.closed {
		return o.cause
	}
	return nil
}

// enqueue says how enqueueLocked queues a message.
type enqueue uint8

const (
	qPost   enqueue = 1 << iota // it came through postEvent
	qInline                     // the sender writes it if no one is writing
	qHold                       // it may wait while the reader holds the queue
)

// enqueueLocked appends to the queue and makes sure someone writes it:
// the caller itself when inline, else a writer goroutine; no one yet if
// the reader holds the queue and the message may wait. It is called with
// o.mu held and releases it. With sh not nil, b is sh's bytes: they count
// in full against maxB, and against the budget only while no other queue
// holds them (see Shared).
func (o *outbox) enqueueLocked(b []byte, sh *Shared, q enqueue) {
	if o.closed {
		o.mu.Unlock()
		return
	}
	if o.budget == nil {
		sh = nil // nothing to count it against: no need to know who holds it
	}
	o.queue = append(o.queue, outMsg{b: b, sh: sh})
	o.bytes.Add(int64(len(b)))
	if sh == nil {
		o.budget.add(len(b))
	} else {
		sh.hold(o.budget)
	}
	if q&qHold != 0 && q&qPost == 0 {
		o.lastRep.Store(int64(len(b)))
	}
	if o.writing || o.holding && q&qHold != 0 && len(o.queue) < holdMax(o.limit) && o.bytes.Load() < o.maxB/2 {
		o.mu.Unlock()
		return
	}
	o.writing = true
	o.armLocked()
	if q&qInline != 0 {
		o.mu.Unlock()
		o.write(true)
		return
	}
	// Spawned under o.mu, while open: close, which the connection calls
	// before it waits for its goroutines, cannot have happened yet.
	o.spawnWriterLocked()
	o.mu.Unlock()
}

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
	var n, own int
	for _, m := range o.queue {
		n += len(m.b)
		if m.sh == nil {
			own += len(m.b)
		}
	}
	releaseShared(o.queue)
	o.bytes.Add(int64(-n))
	o.budget.add(-own)
	o.queue = nil
	if o.room != nil {
		close(o.room)
		o.room = nil
	}
	if o.watchdog != nil {
		o.watchdog.Stop()
	}
}
