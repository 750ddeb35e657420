package peer

import (
	"context"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Handler answers one request. The result is encoded as JSON (a
// json.RawMessage is sent as is); returning an *Error chooses the code sent
// back, and other errors are mapped by [ToError]. For a notification the
// result is discarded. ServeRPC may block (a handler that takes long is
// moved off the connection's reader, see [Concurrent]), and it should
// return when ctx is done.
type Handler interface {
	ServeRPC(ctx context.Context, req *Request) (result any, err error)
}

// HandlerFunc adapts a function to a Handler.
type HandlerFunc func(ctx context.Context, req *Request) (any, error)

// ServeRPC calls f(ctx, req).
func (f HandlerFunc) ServeRPC(ctx context.Context, req *Request) (any, error) { return f(ctx, req) }

// Router finds the handler for a method and says how its calls run. It
// returns a nil Handler for an unknown method. *Mux is the usual Router;
// the hub wraps one to add its own rpc.* methods, and a wrapper passes the
// Mode of what it wraps on, or chooses another.
type Router interface {
	Lookup(method string) (Handler, Mode)
}

// Mode says how the calls of a method run on a connection.
type Mode int

const (
	// Concurrent calls run concurrently, up to Options.MaxInFlight at once
	// on a connection. It is the default. A call starts on the
	// connection's reader, which writes its reply: quick handlers cost no
	// goroutine hand-off. One that takes more than a millisecond is left
	// to finish where it runs while a new goroutine reads on, within a few
	// milliseconds.
	Concurrent Mode = iota

	// Serial calls run one at a time on a connection, in the order they
	// arrived, for methods where order matters. They take in-flight slots
	// like concurrent calls, and other methods still run beside them.
	Serial

	// Inline calls run on the connection's reader, in arrival order,
	// without a goroutine or an in-flight slot of their own. Nothing else
	// on the connection is read while one runs, so an inline handler must
	// never block and must return within microseconds (it may hand work to
	// a queue), and must not wait on anything, least of all on a call over
	// the same connection. Inline suits notifications whose order matters
	// (events) and trivial calls.
	Inline
)

func (m Mode) String() string {
	switch m {
	case Concurrent:
		return "concurrent"
	case Serial:
		return "serial"
	case Inline:
		return "inline"
	}
	return "Mode(" + strconv.Itoa(int(m)) + ")"
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
	h    Handler
	mode Mode
	doc  *Doc
}

// NewMux returns an empty Mux.
func NewMux() *Mux { return new(Mux) }

// Handle registers h for method, to run in the given mode: Concurrent
// when none is given, as in
//
//	mux.Handle("append", peer.Func(appendLine), peer.Serial)
//
// It panics if method is empty, starts with "rpc." (reserved for the
// system methods), or is already registered, or if more than one mode is
// given: those are programming errors, found at startup.
func (m *Mux) Handle(method string, h Handler, mode ...Mode) {
	switch {
	case method == "":
		panic("peer: empty method name")
	case strings.HasPrefix(method, "rpc."):
		panic("peer: method name " + method + " is reserved")
	case h == nil:
		panic("peer: nil handler for " + method)
	case len(mode) > 1:
		panic("peer: more than one mode for " + method)
	}
	e := muxEntry{h: h}
	if len(mode) == 1 {
		e.mode = mode[0]
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

// Describe documents method, registered before, in rpc.discover. It
// panics if method is not registered.
func (m *Mux) Describe(method string, doc Doc) {
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.load()
	e, ok := old[method]
	if !ok {
		panic("peer: Describe of " + method + ", which is not registered")
	}
	e.doc = &doc
	next := make(map[string]muxEntry, len(old))
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

// Lookup returns the handler registered for method and its mode, and
// answers "rpc.discover" itself.
func (m *Mux) Lookup(method string) (Handler, Mode) {
	if e, ok := m.load()[method]; ok {
		return e.h, e.mode
	}
	if method == "rpc.discover" {
		return HandlerFunc(m.discover), Concurrent
	}
	return nil, Concurrent
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
