package peer

import "sync/atomic"

// Budget bounds the bytes waiting to be written on many connections
// together: give the same *Budget to each (Options.QueueBudget). While
// more than its bytes are queued in all, a connection with anything of
// its own queued takes no new call from the other side until its own
// queue has moved, and its replies, calls and notifications wait (events,
// which never wait, still go out within MaxQueue and MaxQueueBytes): the
// connections whose peers do not read are held back, the others are not.
// It is safe for concurrent use.
type Budget struct {
	max  int64
	used atomic.Int64
}

// NewBudget returns a budget of max bytes; max <= 0 means no bound, for a
// budget that only counts.
func NewBudget(max int64) *Budget { return &Budget{max: max} }

// Queued returns the bytes queued on the connections sharing b.
func (b *Budget) Queued() int64 {
	if b == nil {
		return 0
	}
	return b.used.Load()
}

// add counts n more bytes queued, or fewer when n < 0.
func (b *Budget) add(n int) {
	if b != nil {
		b.used.Add(int64(n))
	}
}

// spent reports whether more than the budget is queued.
func (b *Budget) spent() bool {
	return b != nil && b.max > 0 && b.used.Load() > b.max
}
