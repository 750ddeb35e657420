package hub

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchboard-rpc/switchboard/peer"
)

// This file forwards calls to the peers that provide their methods
// (rpc.provide, see provide.go): to one of this hub's, or through the
// Directory to one of another node's.

// The defaults of Options.ForwardTimeout and Options.MaxForwards. A
// provider's own connection serves at most peer.DefaultMaxInFlight calls
// at once by default; the hub sends it no more than that.
const (
	DefaultForwardTimeout = 30 * time.Second
	DefaultMaxForwards    = peer.DefaultMaxInFlight
)

// routes are the methods peers provide and the counters of the calls
// forwarded to them.
type routes struct {
	mu        sync.RWMutex
	root      node               // a subscription per provider and name or pattern
	providers map[*Peer]struct{} // the peers providing at least one

	entries atomic.Int64  // subscriptions in root: none, and lookups take no lock
	next    atomic.Uint32 // spreads calls over equally busy providers

	inflight  atomic.Int64
	lost      atomic.Uint64
	addressed atomic.Uint64 // calls and notifications sent by rpc.call (address.go)

	// Calls waiting for a provider below Options.MaxForwards: freed is
	// closed when a forwarded call ends while waiting > 0.
	waiting atomic.Int64
	slotMu  sync.Mutex
	freed   chan struct{}

	forwarded sync.Map // method -> *atomic.Uint64
	methods   atomic.Int64

	watch provWatchers // WatchProvided's (provide.go)
}

// provision is what one peer provides. Guarded by routes.mu, except
// inflight.
type provision struct {
	patterns map[string]*subscription
	left     bool // the peer left: it may provide nothing more

	inflight atomic.Int64 // calls forwarded to the peer and not yet answered

	// What the peer's rpc.discover said, for rpc.discover on the hub:
	// described is the gen it was asked at, gen counts rpc.provide calls
	// that added a name.
	gen, described uint64
	methods        []describedMethod
}

// lookup ends the hub router's Lookup, for a method that is not one of
// the hub's built-in ones: app's methods, then the provided ones.
func (h *Hub) lookup(app peer.Router, method string) (peer.Handler, peer.Mode) {
	if app != nil {
		if ah, mode := app.Lookup(method); ah != nil {
			return ah, mode
		}
	}
	if h.provided(method) || h.remoteProvided(method) {
		return forwardHandler{h}, peer.Concurrent
	}
	return nil, peer.Concurrent
}

// provided reports whether some peer provides method.
func (h *Hub) provided(method string) bool {
	r := &h.routes
	if r.entries.Load() == 0 || !h.forwardable(method) {
		return false
	}
	var buf [8]*node
	r.mu.RLock()
	found := len(r.root.match(buf[:0], method)) > 0
	r.mu.RUnlock()
	return found
}

// forwardable reports whether a method may be forwarded: a name of
// dot-separated words, as the names and patterns peers provide (and no
// longer than Options.MaxTopicLength), and none of the reserved rpc.*
// names.
func (h *Hub) forwardable(method string) bool {
	return !strings.HasPrefix(method, "rpc.") && validTopic(method, false, h.o.MaxTopicLength)
}

// forwardHandler forwards a call to a peer that provides its method.
type forwardHandler struct{ h *Hub }

var (
	errNoProvider     = &peer.Error{Code: peer.CodeMethodNotFound, Message: "Method not found"}
	errProviderLost   = &peer.Error{Code: peer.CodeProviderLost, Message: "Provider lost"}
	errForwardTimeout = &peer.Error{Code: peer.CodeTimeout, Message: "Request timed out"}
	errInvalidAnswer  = &peer.Error{Code: peer.CodeInternalError, Message: "Internal error: invalid answer from the provider"}
)

func (f forwardHandler) ServeRPC(ctx context.Context, req *peer.Request) (any, error) {
	h := f.h
	if err := h.allow(ctx, Call, req.Method); err != nil {
		return nil, err
	}
	call := !req.IsNotification()
	p, timeout, err := h.pickWait(ctx, req.Method, peer.ConnFromContext(ctx), call)
	if err != nil {
		// None of this node's peers can take it: one of another node's,
		// in a cluster.
		if d := h.directory(); d != nil && h.remoteProvided(req.Method) {
			return h.forwardRemote(ctx, d, req)
		}
		return nil, err
	}
	h.routes.count(req.Method)
	if !call {
		_, err := p.conn.Forward(ctx, req, timeout)
		return nil, err
	}
	// The provider's reader answers the caller (see peer.Conn.Relay).
	return p.conn.Relay(ctx, req, timeout, func(res json.RawMessage, err error) (json.RawMessage, error) {
		h.unpick(p)
		if err == nil {
			return res, nil
		}
		return nil, h.forwardError(ctx, err, false)
	})
}

// forwardError turns the error of a forwarded call, for the caller whose
// request ctx serves, into the caller's answer. The call went to a peer of
// this hub (peer.Conn.Forward) or, remote, to another node
// (Directory.Route). The two differ in two things only: another node's
// -32006 is a provider lost too, and counted; and an error that is none
// of the known ones is, from a peer here, an answer the hub could not
// read (-32603), from another node, a route that failed (-32006).
func (h *Hub) forwardError(ctx context.Context, err error, remote bool) error {
	var e *peer.Error
	switch {
	case errors.As(err, &e):
		if remote && e.Code == peer.CodeProviderLost {
			h.routes.lost.Add(1)
		}
		return e // the peer's answer, or -32005 from a hub going away
	case errors.Is(err, peer.ErrClosed):
		h.routes.lost.Add(1)
		return errProviderLost
	case ctx.Err() != nil:
		return ctx.Err() // the caller left: no one reads the answer
	case errors.Is(err, context.DeadlineExceeded):
		return errForwardTimeout
	case remote:
		h.routes.lost.Add(1)
		return errProviderLost
	}
	return errInvalidAnswer
}

// remoteProvided reports whether a peer on another node provides method.
func (h *Hub) remoteProvided(method string) bool {
	d := h.directory()
	return d != nil && h.forwardable(method) && d.Provides(method)
}

// forwardRemote forwards a call that no peer of this hub can take to a
// provider on another node.
func (h *Hub) forwardRemote(ctx context.Context, d Directory, req *peer.Request) (any, error) {
	call := RemoteCall{Method: req.Method, Params: req.Params, Notification: req.IsNotification()}
	if !call.Notification {
		call.Progress = func(data json.RawMessage) { _ = peer.Progress(ctx, data) }
	}
	fctx := ctx
	if h.o.ForwardTimeout > 0 {
		var cancel context.CancelFunc
		fctx, cancel = context.WithTimeout(ctx, h.o.ForwardTimeout)
		defer cancel()
	}
	h.routes.count(req.Method)
	h.routes.inflight.Add(1)
	res, err := d.Route(fctx, call)
	h.routes.inflight.Add(-1)
	if err == nil {
		return res, nil
	}
	return nil, h.forwardError(ctx, err, true)
}

// errAllBusy is pick's answer when every provider is at MaxForwards.
var errAllBusy = errors.New("hub: every provider is at MaxForwards")

// pickWait is pick, waiting while every provider of method has
// Options.MaxForwards calls in flight, as a call of the hub's own
// methods waits for a slot: the caller is slowed down, not refused, and
// its calls waiting fill its connection's in-flight slots, so that the
// hub stops reading from it. The wait ends with ctx (its error) or after
// Options.ForwardTimeout (-32003). It returns what is left of
// ForwardTimeout for the call itself: the wait counts against it, so that
// a call waits and runs for ForwardTimeout at most in all.
func (h *Hub) pickWait(ctx context.Context, method string, caller *peer.Conn, reserve bool) (*Peer, time.Duration, error) {
	p, err := h.pick(method, caller, reserve)
	if err != errAllBusy { //nolint:errorlint // our own sentinel, unwrapped
		return p, h.o.ForwardTimeout, err
	}
	start := time.Now()
	r := &h.routes
	var timeout <-chan time.Time
	if h.o.ForwardTimeout > 0 {
		t := time.NewTimer(h.o.ForwardTimeout)
		defer t.Stop()
		timeout = t.C
	}
	for {
		// Counted as waiting before pick looks again: a call that ends
		// in between then wakes this one.
		r.waiting.Add(1)
		r.slotMu.Lock()
		if r.freed == nil {
			r.freed = make(chan struct{})
		}
		freed := r.freed
		r.slotMu.Unlock()
		p, err = h.pick(method, caller, reserve)
		if err != errAllBusy { //nolint:errorlint // our own sentinel, unwrapped
			r.waiting.Add(-1)
			left := h.o.ForwardTimeout
			if left > 0 {
				left = max(left-time.Since(start), time.Millisecond)
			}
			return p, left, err
		}
		select {
		case <-freed:
			r.waiting.Add(-1)
		case <-ctx.Done():
			r.waiting.Add(-1)
			return nil, 0, ctx.Err()
		case <-timeout:
			r.waiting.Add(-1)
			return nil, 0, errForwardTimeout
		}
	}
}

// unpick ends a forwarded call that pick counted, and wakes the calls
// waiting for a provider.
func (h *Hub) unpick(p *Peer) {
	p.prov.inflight.Add(-1)
	r := &h.routes
	r.inflight.Add(-1)
	if r.waiting.Load() > 0 {
		r.slotMu.Lock()
		if r.freed != nil {
			close(r.freed)
			r.freed = nil
		}
		r.slotMu.Unlock()
	}
}

// pick chooses the provider of method with the fewest forwarded calls in
// flight, other than the caller's own connection; ties are spread in turn.
// For a call (reserve), it counts the call in the provider's in-flight
// calls, or returns errAllBusy when even that provider is at
// Options.MaxForwards.
func (h *Hub) pick(method string, caller *peer.Conn, reserve bool) (*Peer, error) {
	r := &h.routes
	var nbuf [8]*node
	var pbuf [8]*Peer
	found := pbuf[:0]
	r.mu.RLock()
	for _, n := range r.root.match(nbuf[:0], method) {
		for _, s := range n.subs {
			if s.p.conn != caller && !closing(s.p.conn) {
				found = append(found, s.p)
			}
		}
	}
	r.mu.RUnlock()
	if len(found) == 0 {
		return nil, errNoProvider
	}
	best := found[0]
	if len(found) > 1 {
		start := int(r.next.Add(1) % uint32(len(found)))
		best = found[start]
		least := best.prov.inflight.Load()
		for i := 1; i < len(found); i++ {
			p := found[(start+i)%len(found)]
			if n := p.prov.inflight.Load(); n < least {
				best, least = p, n
			}
		}
	}
	if reserve {
		if best.prov.inflight.Add(1) > int64(h.o.MaxForwards) {
			best.prov.inflight.Add(-1)
			return nil, errAllBusy
		}
		r.inflight.Add(1)
	}
	return best, nil
}

func closing(c *peer.Conn) bool {
	select {
	case <-c.Closing():
		return true
	default:
		return false
	}
}

// maxCountedMethods bounds the methods RouteStats.Forwarded counts apart:
// callers choose the names that a pattern matches.
const maxCountedMethods = 1000

// otherMethods is the key in RouteStats.Forwarded of the methods beyond
// maxCountedMethods. It cannot be a method's name: forwarded names are
// words of letters, digits, '_', '-' and ':'.
const otherMethods = "(other)"

func (r *routes) count(method string) {
	v, ok := r.forwarded.Load(method)
	if !ok {
		key := method
		if r.methods.Load() >= maxCountedMethods {
			key = otherMethods
		}
		var loaded bool
		v, loaded = r.forwarded.LoadOrStore(key, new(atomic.Uint64))
		if !loaded && key != otherMethods {
			r.methods.Add(1)
		}
	}
	v.(*atomic.Uint64).Add(1)
}

// RouteStats are the counters of the calls a hub forwards to the peers
// that provide their methods.
type RouteStats struct {
	Providers int // peers providing methods now
	InFlight  int // forwarded calls waiting for their provider's answer now

	// Forwarded counts the calls and notifications forwarded, by method.
	// The first 1,000 methods are counted apart, later ones together
	// under "(other)".
	Forwarded map[string]uint64

	// ProviderLost counts the forwarded calls answered -32006: their
	// provider disconnected before answering.
	ProviderLost uint64

	// Addressed counts the calls and notifications rpc.call sent to the
	// peers it addressed (one per peer); InFlight includes those not
	// yet answered (a call to a peer of another node is in flight on
	// both nodes), ProviderLost those whose peer left first.
	Addressed uint64
}

func (h *Hub) routeStats() RouteStats {
	r := &h.routes
	r.mu.RLock()
	providers := len(r.providers)
	r.mu.RUnlock()
	st := RouteStats{
		Providers:    providers,
		InFlight:     int(r.inflight.Load()),
		Forwarded:    make(map[string]uint64),
		ProviderLost: r.lost.Load(),
		Addressed:    r.addressed.Load(),
	}
	r.forwarded.Range(func(k, v any) bool {
		st.Forwarded[k.(string)] = v.(*atomic.Uint64).Load()
		return true
	})
	return st
}
