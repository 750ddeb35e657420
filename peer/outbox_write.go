package peer

import "time"

// This file is the writing side of the outbox (outbox.go): the writer
// that drains the queue, in batches, and the write-stall watchdog that
// closes a connection whose writes make no progress.

// stallChecks is how many watchdog checks, stall/stallChecks apart, must
// in a row find a write pending and none completed before the connection
// is closed: a write stuck for stall is found within stall plus one period.
const stallChecks = 2

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
		o.posted = 0   // all of them are in batch
		var n, own int // bytes, and those counted against the budget here
		for _, m := range batch {
			n += len(m.b)
			if m.sh == nil {
				own += len(m.b)
			}
		}
		if o.room != nil {
			close(o.room)
			o.room = nil
		}
		o.mu.Unlock()

		err := o.writeBatch(batch)
		o.mu.Lock()
		o.bytes.Add(int64(-n))
		o.budget.add(-own)
		if err != nil {
			o.mu.Unlock()
			o.fail(err)
			return
		}
		if o.room != nil {
			close(o.room)
			o.room = nil
		}
		if o.spare == nil {
			o.spare = batch[:0]
		}
		if inline && !o.closed && len(o.queue) > 0 {
			o.spawnWriterLocked()
			o.mu.Unlock()
			return
		}
		o.mu.Unlock()
	}
}

// holdWrites, turned on, keeps what is queued from then on from being
// written until it is turned off, when it goes out in one go. The reader
// turns it on while it dispatches a message that another one, read
// already, follows: it comes back to write before it waits for the other
// side, and the replies to the messages of one read leave together, with
// one system call where the transport can gather them (Caps.Gather),
// instead of one each. A message that finds holdMax queued is written
// (with the others) at once, and so is one queued while a writer is at
// work.
func (o *outbox) holdWrites(on bool) {
	o.mu.Lock()
	o.holding = on
	if on || o.closed || o.writing || len(o.queue) == 0 {
		o.mu.Unlock()
		return
	}
	o.writing = true
	o.armLocked()
	o.mu.Unlock()
	o.write(true)
}

// holdMax is how many messages holdWrites keeps back at most in a queue
// of limit: a reader waiting for room in a held queue would wait for
// itself.
func holdMax(limit int) int { return min(limit/2, 64) }

// writeBatch writes the messages of batch, in one go when there are
// several and the transport can gather them, and clears batch, releasing
// the shared messages as they are written (or not, after an error).
func (o *outbox) writeBatch(batch []outMsg) error {
	gather := o.gather != nil && len(batch) > 1
	if gather {
		o.gather.Hold()
	}
	var err error
	for i, m := range batch {
		if m.sh == pingFrame {
			err = o.writePing(m.b)
		} else {
			err = o.t.Write(o.ctx, m.b)
		}
		if err != nil {
			releaseShared(batch[i:])
			break
		}
		if m.sh != nil {
			m.sh.release()
		}
		batch[i] = outMsg{}
		if !gather {
			o.written.Add(1)
		}
	}
	if gather {
		// Even after a failed write: what the transport wrote meanwhile
		// (a close frame) must go out.
		if ferr := o.gather.Flush(); err == nil {
			err = ferr
		}
		if err == nil {
			o.written.Add(uint64(len(batch)))
		}
	}
	return err
}

// releaseShared releases the shared messages of q, which no longer holds
// them, and clears q.
func releaseShared(q []outMsg) {
	for i, m := range q {
		if m.sh != nil {
			m.sh.release()
		}
		q[i] = outMsg{}
	}
}

// spawnWriterLocked starts a writer goroutine, with o.mu held.
//
// The writer is a goroutine of its own, not a parked worker of the
// connection (workers.go): a hub wakes each subscriber's writer for every
// event, and a worker costs a timer that fires every workerIdle while it
// lives, each firing a goroutine of the runtime's and operations on its
// heap of timers, which holds one per connection. With events a second or
// more apart, each delivery paid a new worker and two firings (see
// docs/scale.md). A new goroutine starts with a stack of the size
// goroutines use on average, which the writer needs no more than.
func (o *outbox) spawnWriterLocked() {
	o.wg.Add(1)
	go o.writeQueued()
}

// writeQueued is the writer goroutine.
func (o *outbox) writeQueued() {
	defer o.wg.Done()
	o.write(false)
}

// armLocked starts the watchdog when a writer starts, unless it runs
// already. Once armed, it stays armed while writers keep starting, so a
// busy connection arms a timer once per period, not once per write.
func (o *outbox) armLocked() {
	if o.stall <= 0 || o.armed {
		return
	}
	o.armed = true
	o.seen = o.written.Load()
	o.strikes = 0
	period := o.stall / stallChecks
	if o.watchdog == nil {
		o.watchdog = time.AfterFunc(period, o.check)
	} else {
		o.watchdog.Reset(period)
	}
}

// check is the watchdog, run by the timer: it disarms once no one is
// writing, and closes the connection when a write has been pending for
// stall with none completed.
func (o *outbox) check() {
	o.mu.Lock()
	if o.closed || !o.writing {
		o.armed = false
		o.mu.Unlock()
		return
	}
	if n := o.written.Load(); n != o.seen {
		o.seen, o.strikes = n, 0
	} else {
		o.strikes++
	}
	if o.strikes < stallChecks {
		o.watchdog.Reset(o.stall / stallChecks)
		o.mu.Unlock()
		return
	}
	o.armed = false
	o.mu.Unlock()
	o.fail(errWriteStalled)
}
