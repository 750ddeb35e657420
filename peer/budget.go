package peer

import (
	"context"
	"sync/atomic"
)

// Budget bounds the bytes waiting to be written on many connections
// together: give the same *Budget to each (Options.QueueBudget). While
// more than its bytes are queued in all, a connection with anything of
// its own queued takes no new call from the other side until its own
// queue has moved, and its replies, calls, notifications and shared
// messages sent with [Conn.SendShared] wait (events, which never wait,
// still go out within MaxQueue and MaxQueueBytes): the connections whose
// peers do not read are held back, the others are not.
//
// What it counts is what the queues hold: a message queued on one
// connection counts its bytes; a [Shared] message counts its bytes once,
// however many connections have it queued, from when the first queues it
// until the last has written it (or closed). It is safe for concurrent
// use.
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

// Shared is an encoded message to be queued on many connections, such as
// a hub event fanned out to its subscribers: [Conn.PostShared] and
// [Conn.SendShared] queue the same bytes on each, and the [Budget] the
// connections share counts them once, for as long as any of them has
// them to write. Each connection's own bound (Options.MaxQueueBytes)
// counts them in full: it bounds how far that peer falls behind.
//
// The connections a Shared is queued on should share one Budget (those
// of one server do): it counts against the Budget of the first of them,
// or of none if that one has none. The message must not be modified
// once made.
type Shared struct {
	b      []byte
	refs   atomic.Int64           // queues holding it
	budget atomic.Pointer[Budget] // where it counts, set by the first queue
}

// NewShared returns msg as a Shared message; msg must not be modified
// afterwards.
func NewShared(msg []byte) *Shared { return &Shared{b: msg} }

// Bytes returns the message; it must not be modified.
func (s *Shared) Bytes() []byte { return s.b }

// hold counts one more queue holding s, on behalf of a connection with
// budget b: the first counts its bytes against the budget.
func (s *Shared) hold(b *Budget) {
	if s.refs.Add(1) != 1 {
		return
	}
	if b != nil && s.budget.Load() == nil {
		s.budget.CompareAndSwap(nil, b)
	}
	s.budget.Load().add(len(s.b))
}

// release counts one queue fewer holding s: the last gives its bytes
// back to the budget.
func (s *Shared) release() {
	if s.refs.Add(-1) == 0 {
		s.budget.Load().add(-len(s.b))
	}
}

// PostShared is [Conn.Post] for a message queued on many connections.
func (c *Conn) PostShared(s *Shared) error {
	err := c.out.postEvent(s.b, s)
	if err == ErrTooSlow { //nolint:errorlint // postEvent returns it bare
		c.tooSlow()
	}
	return err
}

// SendShared queues a message queued on many connections, as [Conn.Notify]
// queues a notification: it waits for room until ctx ends, and fails
// only then or once the connection has closed.
func (c *Conn) SendShared(ctx context.Context, s *Shared) error {
	return c.out.sendReserved(ctx, s.b, s, false, 0)
}
