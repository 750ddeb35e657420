package peer

import (
	"sync"
	"sync/atomic"
	"time"
)

// workers runs a connection's tasks (handlers, batches, the writer) on
// goroutines that outlive one task.
//
// A worker that finishes its task stays parked, and the next task goes to
// it rather than to a new goroutine: a new goroutine starts with a small
// stack and grows it, by copying, on its way into a handler's JSON
// decoding, which costs more than the rest of a call's dispatch; a parked
// worker already has the stack it needs. A worker ends once a whole
// workerIdle has passed without a task, or when the connection closes, so
// an idle connection has no workers left.
type workers struct {
	wg    *sync.WaitGroup // the connection's: Serve waits for it
	quit  <-chan struct{} // closed when the connection starts closing
	tasks chan func()     // hands a task to a parked worker
	count atomic.Int32    // workers alive, parked ones included
}

// workerIdle is the period a worker must spend without a task to end.
const workerIdle = time.Second

// spawn runs fn on a parked worker, or on a new one. Callers make sure
// that the WaitGroup is not added to after the connection waited for it:
// they call spawn from the reader, from a goroutine the WaitGroup counts,
// or under a lock that is also held when the connection starts closing,
// having checked that it has not.
func (w *workers) spawn(fn func()) {
	select {
	case w.tasks <- fn:
		return
	default:
	}
	w.wg.Add(1)
	go w.run(fn)
}

// run is a worker goroutine: it runs fn, then whatever tasks it is
// handed, until a period of workerIdle passes without one or the
// connection closes. The timer is armed once per period, not once per
// task: arming a timer can wake the runtime's network poller, a system
// call.
func (w *workers) run(fn func()) {
	w.count.Add(1)
	defer w.wg.Done()
	defer w.count.Add(-1)
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	busy := false // a task ran in this period
	for {
		if fn != nil {
			fn()
			fn = nil // let the task's captures go while parked
			busy = true
		}
		select {
		case fn = <-w.tasks:
		case <-idle.C:
			if !busy {
				return
			}
			busy = false
			idle.Reset(workerIdle)
		case <-w.quit:
			return
		}
	}
}
