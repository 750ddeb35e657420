package peer

import (
	"testing"

	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

// A message shared by many queues counts once against the budget they
// share, for as long as any of them holds it; each queue's own bytes
// count it in full; and what is queued on one connection counts once too.
// The budget then says what the queues hold.
func TestBudgetCountsSharedOnce(t *testing.T) {
	budget := NewBudget(0)
	gates := make([]*gatedTransport, 3)
	boxes := make([]*outbox, 3)
	for i := range boxes {
		gates[i] = &gatedTransport{gate: make(chan struct{})}
		boxes[i] = newTestOutbox(t, gates[i], 16)
		boxes[i].budget = budget
	}
	ev := NewShared(make([]byte, 1000))
	for _, o := range boxes {
		if err := o.postEvent(ev.b, ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := boxes[0].postEvent(make([]byte, 10), nil); err != nil {
		t.Fatal(err)
	}
	queued := func(want int64) {
		t.Helper()
		testkit.WaitFor(t, "the budget to count what is held", func() bool { return budget.Queued() == want })
	}
	queued(1010)
	for i, o := range boxes {
		want := int64(1000)
		if i == 0 {
			want = 1010
		}
		if got := o.bytes.Load(); got != want {
			t.Fatalf("queue %d counts %d bytes, want %d", i, got, want)
		}
	}

	gates[1].gate <- struct{}{} // queue 1 writes the shared message: the others still hold it
	testkit.WaitFor(t, "queue 1 to write", boxes[1].idle)
	queued(1010)
	gates[0].gate <- struct{}{}
	gates[0].gate <- struct{}{}
	testkit.WaitFor(t, "queue 0 to write", boxes[0].idle)
	queued(1000)
	gates[2].gate <- struct{}{}
	queued(0)

	// Queued again later, it counts again; a queue closed with it
	// unwritten lets go of it.
	if err := boxes[1].postEvent(make([]byte, 10), nil); err != nil {
		t.Fatal(err)
	}
	waitWriting(t, boxes[1])
	if err := boxes[1].postEvent(ev.b, ev); err != nil {
		t.Fatal(err)
	}
	queued(1010)
	boxes[1].close(ErrClosed)
	queued(10) // what the writer writes until the connection's context ends
}
