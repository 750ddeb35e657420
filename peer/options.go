package peer

import (
	"time"

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

	// MaxInFlight caps the calls served at once on one connection (a batch
	// counts for each element running). Default [DefaultMaxInFlight]; a
	// call over the limit gets -32004 at once, and a notification over it
	// is dropped.
	MaxInFlight int

	// MaxQueue caps the outbound queue: the messages of every kind
	// (replies, calls, notifications, events) waiting to be written to the
	// other side. Default [DefaultMaxQueue]. It sets three thresholds:
	//   - calls, notifications and handlers' replies wait for room while
	//     MaxQueue messages are queued; they are never dropped;
	//   - messages queued with [Conn.Post], such as hub events, never wait:
	//     once MaxQueue of them are queued, the other side is too slow for
	//     them and is closed with 1008;
	//   - the reader's own immediate replies (errors, rpc.ping) never wait
	//     either: once twice MaxQueue messages are queued, the other side
	//     sends without reading and is closed with 1008 too.
	MaxQueue int

	// CallTimeout bounds a [Conn.Call] whose context has no deadline.
	// Default [DefaultCallTimeout]; negative means no bound.
	CallTimeout time.Duration

	// BatchWorkers caps how many elements of one incoming batch run at
	// once. Default [DefaultBatchWorkers]. Elements run in goroutines of
	// their own only when a batch has more than one; a slow element delays
	// only its worker.
	BatchWorkers int

	// Logger receives diagnostics: recovered panics, dropped messages,
	// connection errors. Nil discards them.
	Logger *zap.Logger

	// OnServe, if set, is called after each request this side served, with
	// the method (or "" when no handler was found), the error code sent
	// back (0 for a result) and the time the handler took. It must be fast:
	// it runs on the handler's goroutine. Metrics hook here.
	OnServe func(method string, code Code, elapsed time.Duration)
}

// The defaults of the Options fields. Packages that configure a Conn
// (the server, the client, the hub command) refer to these rather than
// repeat them.
const (
	DefaultMaxMessage   = 1 << 20 // bytes
	DefaultMaxBatch     = 1000    // elements
	DefaultMaxInFlight  = 256     // calls per connection
	DefaultMaxQueue     = 1024    // messages per connection
	DefaultCallTimeout  = 30 * time.Second
	DefaultBatchWorkers = 4 // goroutines per batch
)

// withDefaults returns a copy of o with every zero field set.
func (o *Options) withDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.MaxMessage <= 0 {
		c.MaxMessage = DefaultMaxMessage
	}
	if c.MaxBatch <= 0 {
		c.MaxBatch = DefaultMaxBatch
	}
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
	if c.MaxQueue <= 0 {
		c.MaxQueue = DefaultMaxQueue
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = DefaultCallTimeout
	}
	if c.BatchWorkers <= 0 {
		c.BatchWorkers = DefaultBatchWorkers
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	if c.Router == nil {
		c.Router = emptyRouter{}
	}
	return c
}

type emptyRouter struct{}

func (emptyRouter) Lookup(string) (Handler, Mode) { return nil, Concurrent }
