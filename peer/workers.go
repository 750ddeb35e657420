package peer

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// workers runs a connection's tasks (handlers, batches) on goroutines
// that outlive one task. The writer is not one of them (see
// outbox.spawnWriterLocked).
//
// A worker that finishes its task stays parked, and the next task goes to
// it rather than to a new goroutine: a new goroutine starts with a small
// stack and grows it, by copying, on its way into a handler's JSON
// decoding, which costs more than the rest of a call's dispatch; a parked
// worker already has the stack it needs. A worker ends once a whole
// workerIdle has passed without a task, or when the connection closes, so
// an idle connection has no workers left.
//
// A parked worker waits on a channel of its own, and on nothing else:
// when the writer ran on workers, a hub's fan-out woke one for every
// event, and a select that also watched the connection's end and an idle
// timer cost 8% of the hub's CPU under fanout (locking three channels, and moving the
// timer in and out of the runtime's heap at each wait). Its idle timer is
// a time.AfterFunc instead, armed once per period.
type workers struct {
	wg    *sync.WaitGroup // the connection's: Serve waits for it
	count atomic.Int32    // workers alive, parked ones included

	mu     sync.Mutex // after Conn.mu and outbox.mu (see Conn.mu)
	closed bool       // the connection is closing: no worker parks
	parked []*worker  // the last one parked is the first one handed a task
}

// worker is one worker goroutine, seen from the pool.
type worker struct {
	tasks chan func() // one task at a time; nil: end
	idle  *time.Timer // retires the worker; guarded by workers.mu
	busy  bool        // a task ran in this period; guarded by workers.mu
	ended bool        // guarded by workers.mu
}

// workerIdle is the period a worker must spend without a task to end.
const workerIdle = time.Second

// spawn runs fn on a parked worker, or on a new one. Callers make sure
// that the WaitGroup is not added to after the connection waited for it:
// they call spawn from the reader, from a goroutine the WaitGroup counts,
// or under a lock that is also held when the connection starts closing,
// having checked that it has not.
func (w *workers) spawn(fn func()) {
	w.mu.Lock()
	if n := len(w.parked); n > 0 {
		k := w.parked[n-1]
		w.parked[n-1] = nil
		w.parked = w.parked[:n-1]
		w.mu.Unlock()
		k.tasks <- fn // taken off parked: no one else sends, and there is room
		return
	}
	w.mu.Unlock()
	w.wg.Add(1)
	go w.run(fn)
}

// run is a worker goroutine: it runs fn, then whatever tasks it is
// handed, until it is retired after a period of workerIdle without one or
// the connection closes.
func (w *workers) run(fn func()) {
	w.count.Add(1)
	defer w.wg.Done()
	defer w.count.Add(-1)
	k := &worker{tasks: make(chan func(), 1)}
	w.mu.Lock()
	k.idle = time.AfterFunc(workerIdle, func() { w.retire(k) })
	w.mu.Unlock()
	defer w.end(k)
	for fn != nil {
		fn()
		fn = nil // let the task's captures go while parked
		if !w.park(k) {
			return
		}
		fn = <-k.tasks
	}
}

// park puts k on the parked list, unless the connection is closing.
func (w *workers) park(k *worker) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return false
	}
	k.busy = true
	w.parked = append(w.parked, k)
	return true
}

// retire is k's idle timer: it ends k if k is parked and ran no task in
// the period that ends, and otherwise waits for another period.
func (w *workers) retire(k *worker) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if k.ended {
		return
	}
	if !k.busy {
		for i, p := range w.parked {
			if p == k {
				w.parked = slices.Delete(w.parked, i, i+1)
				k.tasks <- nil
				return
			}
		}
	}
	k.busy = false // or k runs a task: it is busy once it parks
	k.idle.Reset(workerIdle)
}

// end is called by a worker that ends.
func (w *workers) end(k *worker) {
	w.mu.Lock()
	k.ended = true
	k.idle.Stop()
	w.mu.Unlock()
}

// close ends the parked workers, and the others once their task is done.
// The connection calls it when it starts closing.
func (w *workers) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	for _, k := range w.parked {
		k.tasks <- nil
	}
	w.parked = nil
}
