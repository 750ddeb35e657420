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
	// 1 MiB; a larger message closes the connection with 1009.
	MaxMessage int

	// MaxBatch caps the elements of one incoming batch. Default 1000; a
	// larger batch gets a single -32600 error.
	MaxBatch int

	// MaxInFlight caps the calls served at once on one connection (a batch
	// counts for each element running). Default 256; a call over the limit
	// gets -32004 at once, and a notification over it is dropped.
	MaxInFlight int

	// MaxQueue caps the messages waiting to be written. Default 1024.
	// Replies and calls wait for room (they are never dropped); messages
	// queued with [Conn.Post], such as hub events, do not wait: a peer with
	// MaxQueue of them waiting is closed with 1008, as too slow.
	MaxQueue int

	// CallTimeout bounds a [Conn.Call] whose context has no deadline.
	// Default 30s; negative means no bound.
	CallTimeout time.Duration

	// BatchWorkers caps how many elements of one incoming batch run at
	// once. Default 4. Elements run in goroutines of their own only when
	// a batch has more than one; a slow element delays only its worker.
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

const (
	defaultMaxMessage   = 1 << 20
	defaultMaxBatch     = 1000
	defaultMaxInFlight  = 256
	defaultMaxQueue     = 1024
	defaultCallTimeout  = 30 * time.Second
	defaultBatchWorkers = 4
)

// withDefaults returns a copy of o with every zero field set.
func (o *Options) withDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.MaxMessage <= 0 {
		c.MaxMessage = defaultMaxMessage
	}
	if c.MaxBatch <= 0 {
		c.MaxBatch = defaultMaxBatch
	}
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = defaultMaxInFlight
	}
	if c.MaxQueue <= 0 {
		c.MaxQueue = defaultMaxQueue
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = defaultCallTimeout
	}
	if c.BatchWorkers <= 0 {
		c.BatchWorkers = defaultBatchWorkers
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

func (emptyRouter) Lookup(string) (Handler, bool) { return nil, false }
