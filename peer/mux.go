package peer

import (
	"context"
	"reflect"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// Handler answers one request. The result is encoded as JSON (a
// json.RawMessage is sent as is); returning an *Error chooses the code sent
// back, and other errors are mapped by [ToError]. For a notification the
// result is discarded. ServeRPC runs on its own goroutine: it may block, and
// it should return when ctx is done.
type Handler interface {
	ServeRPC(ctx context.Context, req *Request) (result any, err error)
}

// HandlerFunc adapts a function to a Handler.
type HandlerFunc func(ctx context.Context, req *Request) (any, error)

// ServeRPC calls f(ctx, req).
func (f HandlerFunc) ServeRPC(ctx context.Context, req *Request) (any, error) { return f(ctx, req) }

// Router finds the handler for a method. It returns a nil Handler for an
// unknown method. serial reports that calls of the method must run one at a
// time, in the order they arrived (see [Serial]). *Mux is the usual Router;
// the hub wraps one to add its own rpc.* methods.
type Router interface {
	Lookup(method string) (h Handler, serial bool)
}

// Serial marks h as a method whose calls on one connection run one at a
// time, in arrival order, for methods where order matters. Other methods
// still run concurrently with them.
func Serial(h Handler) Handler { return serialHandler{h} }

type serialHandler struct{ Handler }

// Inline marks h as a handler that never blocks and returns within
// microseconds, such as one that hands an event to a queue. It runs on the
// connection's reader goroutine, in arrival order, without a goroutine or
// an in-flight slot of its own: nothing else on the connection is read
// while it runs, so it must not wait on anything, least of all on a call
// over the same connection. Inline suits notifications whose order
// matters (events) and trivial calls.
func Inline(h Handler) Handler { return inlineHandler{h} }

type inlineHandler struct{ Handler }

// IsInline reports whether h was marked with [Inline], so that a Router
// wrapping handlers (to authorize them, say) can keep the mark.
func IsInline(h Handler) bool {
	_, ok := h.(inlineHandler)
	return ok
}

// unwrap returns the handler inside the Serial and Inline markers.
func unwrap(h Handler) Handler {
	for {
		switch w := h.(type) {
		case serialHandler:
			h = w.Handler
		case inlineHandler:
			h = w.Handler
		default:
			return h
		}
	}
}

// describer is implemented by handlers that know their Go parameter and
// result types ([Func]), so rpc.discover can describe them.
type describer interface {
	types() (params, result reflect.Type)
}

// Mux is a Router that maps method names to handlers. Its zero value is an
// empty Mux ready to use. It is safe for concurrent use: methods may be added
// while connections are being served.
//
// A Mux also answers rpc.discover with an OpenRPC document of its methods.
type Mux struct {
	// Title and Version go into the info object of the rpc.discover
	// document. They default to "Switchboard" and "0.0.0".
	Title, Version string

	mu      sync.Mutex                          // serializes writers
	methods atomic.Pointer[map[string]muxEntry] // copy on write: lookups take no lock
}

type muxEntry struct {
	h      Handler
	serial bool
}

// NewMux returns an empty Mux.
func NewMux() *Mux { return new(Mux) }

// Handle registers h for method. It panics if method is empty, starts with
// "rpc." (reserved for the system methods), or is already registered:
// those are programming errors, found at startup.
func (m *Mux) Handle(method string, h Handler) {
	switch {
	case method == "":
		panic("peer: empty method name")
	case strings.HasPrefix(method, "rpc."):
		panic("peer: method name " + method + " is reserved")
	case h == nil:
		panic("peer: nil handler for " + method)
	}
	e := muxEntry{h: h}
	if s, ok := h.(serialHandler); ok {
		e.h, e.serial = s.Handler, true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.load()
	if _, dup := old[method]; dup {
		panic("peer: method " + method + " registered twice")
	}
	next := make(map[string]muxEntry, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	next[method] = e
	m.methods.Store(&next)
}

// HandleFunc registers f for method, like Handle.
func (m *Mux) HandleFunc(method string, f func(ctx context.Context, req *Request) (any, error)) {
	m.Handle(method, HandlerFunc(f))
}

func (m *Mux) load() map[string]muxEntry {
	if p := m.methods.Load(); p != nil {
		return *p
	}
	return nil
}

// Lookup returns the handler registered for method, and answers
// "rpc.discover" itself.
func (m *Mux) Lookup(method string) (Handler, bool) {
	if e, ok := m.load()[method]; ok {
		return e.h, e.serial
	}
	if method == "rpc.discover" {
		return HandlerFunc(m.discover), false
	}
	return nil, false
}

// Methods returns the registered method names, sorted.
func (m *Mux) Methods() []string {
	methods := m.load()
	names := make([]string, 0, len(methods))
	for name := range methods {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
