package peer

import (
	"math"
	"strconv"
	"time"

	"github.com/switchboard-rpc/switchboard/internal/turns"
	"go.uber.org/zap"
)

// Options configures a Conn or [Respond]. A nil *Options is valid and gives
// the defaults; zero fields mean their defaults too.
type Options struct {
	// Router serves the calls the other side makes. Nil serves none: every
	// call gets -32601 (the system methods rpc.ping and rpc.cancel still work).
	Router Router

	// MaxMessage caps the size of one incoming message, in bytes. Default
	// [DefaultMaxMessage]; a larger message closes the connection with 1009.
	MaxMessage int

	// MaxBatch caps the elements of one incoming batch. Default
	// [DefaultMaxBatch]; a larger batch gets a single -32600 error.
	MaxBatch int

	// MaxDepth caps the nesting of one incoming message: arrays and objects
	// within each other, the message's own object and a batch's array
	// included. Default [DefaultMaxDepth]; a deeper message gets a single
	// -32600 error (id null: it is not decoded) and the connection stays
	// open.
	MaxDepth int

	// MaxInFlight caps the calls served at once on one connection; a batch
	// takes as many as it runs at once (up to BatchWorkers). Default
	// [DefaultMaxInFlight]. When they are all taken, the reader waits for
	// one before it reads on: the other side is slowed down, not refused.
	// A handler waiting on a call back to its own caller lends its slot
	// meanwhile (up to MaxInFlight such handlers), so that the reader can
	// read the answer.
	MaxInFlight int

	// MaxQueue caps the outbound queue: the messages of every kind
	// (replies, calls, notifications, events) waiting to be written to the
	// other side. Default [DefaultMaxQueue]. Replies, calls and
	// notifications wait for room; they are never dropped, and while the
	// reader waits for room for its own replies, it reads nothing: a peer
	// that sends and does not read is slowed down. Messages queued with
	// [Conn.Post], such as hub events, never wait: once MaxQueue of them are
	// queued, the other side is too slow for them and is closed with 1008.
	MaxQueue int

	// MaxQueueBytes caps the outbound queue in bytes, as MaxQueue does in
	// messages: replies, calls and notifications wait while that many
	// bytes are queued (one larger message goes out alone), the reader
	// takes no new call from the other side meanwhile, and the other side
	// is too slow for events (1008). Default [DefaultMaxQueueBytes].
	MaxQueueBytes int

	// QueueBudget, if set, is shared with other connections and bounds
	// the bytes queued on all of them (see [Budget]).
	QueueBudget *Budget

	// WriteStall closes the connection, with 1008, once writes have made
	// no progress for that long: the other side does not read at all.
	// Default [DefaultWriteStall]; negative means never.
	WriteStall time.Duration

	// Rate and Burst limit the requests and notifications the other side
	// sends, each batch element counting as one: a token bucket holding
	// Burst tokens, refilled at Rate per second. Over the limit, a call
	// gets -32004 at once and a notification is dropped; the connection
	// stays open. Rate 0, the default, sets no limit. Burst defaults to one
	// second's worth (Rate rounded up, at least 1). Responses to this
	// side's own calls are never limited.
	Rate  float64
	Burst int

	// CallTimeout bounds a [Conn.Call] whose context has no deadline.
	// Default [DefaultCallTimeout]; negative means no bound.
	CallTimeout time.Duration

	// BatchWorkers caps how many elements of one incoming batch run at
	// once. Default [DefaultBatchWorkers]. A batch's elements run one
	// after the other on one goroutine; only when the batch runs long (a
	// slow element) do up to BatchWorkers-1 more goroutines join in: on
	// the connection's reader, when its watchdog takes the reading from
	// the batch (a few milliseconds at most); elsewhere, after half a
	// millisecond.
	BatchWorkers int

	// Logger receives diagnostics: recovered panics, dropped messages,
	// connection errors. Nil discards them.
	Logger *zap.Logger

	// Share, if set, is shared by the connections of a server: it caps
	// how many busy connections (those whose next message is always
	// already there, such as a client keeping many calls in flight) are
	// read at once, so that they cannot keep every core busy and delay
	// the messages of every other connection. The server package sets it
	// (its Options.BusyReaders); nil, for any other user, sets no cap.
	Share *turns.Share

	// OnServe, if set, is called after each request this side served, with
	// the method (or "" when no handler was found), the error code sent
	// back (0 for a result) and the time the handler took. It must be fast:
	// it runs on the handler's goroutine. Metrics hook here.
	OnServe func(method string, code Code, elapsed time.Duration)

	// OnLimit, if set, is called each time a message from the other side
	// goes over one of the limits above, with the limit, and when writes
	// stall for WriteStall (LimitWriteStall). It must be fast: it runs on
	// the reader (on a timer's goroutine for LimitWriteStall). Metrics
	// hook here.
	OnLimit func(Limit)
}

// Limit names a limit of Options that a message from the other side went
// over, for Options.OnLimit.
type Limit int

const (
	LimitMessage    Limit = iota + 1 // MaxMessage: the connection closed with 1009
	LimitBatch                       // MaxBatch: -32600
	LimitDepth                       // MaxDepth: -32600
	LimitRate                        // Rate and Burst: -32004, or a notification dropped
	LimitWriteStall                  // WriteStall: the other side read nothing; closed with 1008
)

var limitNames = [...]string{LimitMessage: "message_size", LimitBatch: "batch", LimitDepth: "depth", LimitRate: "rate",
	LimitWriteStall: "write_stall"}

// String returns the limit's name as metrics label it: "message_size",
// "batch", "depth", "rate" or "write_stall".
func (l Limit) String() string {
	if l > 0 && int(l) < len(limitNames) {
		return limitNames[l]
	}
	return "Limit(" + strconv.Itoa(int(l)) + ")"
}

// The defaults of the Options fields. Packages that configure a Conn
// (the server, the client, the hub command) refer to these rather than
// repeat them.
const (
	DefaultMaxMessage    = 1 << 20 // bytes
	DefaultMaxBatch      = 1000    // elements
	DefaultMaxInFlight   = 256     // calls per connection
	DefaultMaxQueue      = 1024    // messages per connection
	DefaultMaxQueueBytes = 8 << 20 // bytes per connection
	DefaultMaxDepth      = 64      // levels of nesting
	DefaultCallTimeout   = 30 * time.Second
	DefaultBatchWorkers  = 4 // goroutines per batch
	DefaultWriteStall    = 30 * time.Second

	// DefaultPingInterval and DefaultPingTimeout are the liveness defaults
	// of the server and the client, which call [Conn.Ping] every interval:
	// a peer that stops answering is closed within their sum.
	DefaultPingInterval = 30 * time.Second
	DefaultPingTimeout  = 30 * time.Second
)

// withDefaults returns a copy of o with every zero field set.
func (o *Options) withDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	positive(&c.MaxMessage, DefaultMaxMessage)
	positive(&c.MaxBatch, DefaultMaxBatch)
	positive(&c.MaxDepth, DefaultMaxDepth)
	positive(&c.MaxInFlight, DefaultMaxInFlight)
	positive(&c.MaxQueue, DefaultMaxQueue)
	positive(&c.MaxQueueBytes, DefaultMaxQueueBytes)
	positive(&c.BatchWorkers, DefaultBatchWorkers)
	if c.Rate > 0 {
		positive(&c.Burst, max(1, int(math.Ceil(c.Rate)))) // one second's worth
	}
	unlessSet(&c.CallTimeout, DefaultCallTimeout)
	unlessSet(&c.WriteStall, DefaultWriteStall)
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	if c.Router == nil {
		c.Router = emptyRouter{}
	}
	return c
}

// positive sets *v to def unless it is positive.
func positive(v *int, def int) {
	if *v <= 0 {
		*v = def
	}
}

// unlessSet sets *d to def when it is zero; a negative *d means none.
func unlessSet(d *time.Duration, def time.Duration) {
	if *d == 0 {
		*d = def
	}
}

type emptyRouter struct{}

func (emptyRouter) Lookup(string) (Handler, Mode) { return nil, Concurrent }
