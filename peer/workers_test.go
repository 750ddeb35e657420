package peer

import (
	"sync"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

// A task goes to a parked worker rather than to a new goroutine, and
// closing ends the parked workers at once, not after workerIdle.
func TestWorkersReuseAndClose(t *testing.T) {
	var wg sync.WaitGroup
	w := &workers{wg: &wg}
	ran := make(chan struct{})
	parked := func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.parked) == 1
	}
	for range 3 {
		w.spawn(func() { ran <- struct{}{} })
		<-ran
		testkit.WaitFor(t, "the worker to park", parked)
		if n := w.count.Load(); n != 1 {
			t.Fatalf("%d workers alive, want the one, reused", n)
		}
	}
	w.close()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(workerIdle / 2):
		t.Fatal("a parked worker is still alive after close")
	}
}
