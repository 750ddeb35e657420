package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/switchboard-rpc/switchboard/peer"
)

// This file holds rpc.provide and rpc.unprovide: the names and patterns of
// the methods each peer serves to the others.

// maxProvided caps the names and patterns one peer may provide; an
// rpc.provide that would go over it gets -32004 and provides nothing.
const maxProvided = 1000

type (
	provideHandler   struct{ h *Hub }
	unprovideHandler struct{ h *Hub }
)

// methodsResult is the result of rpc.provide and rpc.unprovide.
type methodsResult struct {
	Methods []string `json:"methods"`
}

func (ph provideHandler) ServeRPC(ctx context.Context, req *peer.Request) (any, error) {
	h := ph.h
	p, methods, err := h.methodsRequest(ctx, req)
	if err != nil {
		return nil, err
	}
	for {
		gen := p.auth.gen.Load()
		for _, m := range methods {
			if err := h.allow(ctx, Provide, m); err != nil {
				return nil, err
			}
		}
		err := h.provide(p, methods, gen)
		if err == nil {
			break
		}
		if err != errReauthorized {
			return nil, err
		}
	}
	h.changed()
	return methodsResult{methods}, nil
}

func (uh unprovideHandler) ServeRPC(ctx context.Context, req *peer.Request) (any, error) {
	p, methods, err := uh.h.methodsRequest(ctx, req)
	if err != nil {
		return nil, err
	}
	removed := uh.h.unprovide(p, methods)
	if len(removed) > 0 {
		uh.h.changed()
	}
	return methodsResult{removed}, nil
}

// methodsRequest returns the peer making an rpc.provide or rpc.unprovide
// request and the names and patterns it gives.
func (h *Hub) methodsRequest(ctx context.Context, req *peer.Request) (*Peer, []string, error) {
	methods, err := methodParams(req.Params, h.o.MaxTopicLength)
	if err != nil {
		return nil, nil, err
	}
	p := h.PeerFromContext(ctx)
	if p == nil {
		return nil, nil, peer.Errorf(peer.CodeApplication, "%s needs a WebSocket connection to forward calls to", req.Method)
	}
	return p, methods, nil
}

// methodParams reads the params of rpc.provide and rpc.unprovide:
// {"methods": [name, ...]} or [name, ...], without duplicates, each at
// most maxLen bytes long.
func methodParams(params json.RawMessage, maxLen int) ([]string, error) {
	const usage = `takes {"methods": [name or pattern, ...]}`
	var methods []string
	var p struct {
		Methods []string `json:"methods"`
	}
	form, err := readParams(params, &p, &methods)
	if err != nil {
		return nil, invalidParams(usage)
	}
	if form == paramsByName {
		methods = p.Methods
	}
	if len(methods) == 0 {
		return nil, invalidParams("no method: " + usage)
	}
	out := methods[:0]
	seen := make(map[string]bool, len(methods))
	for _, m := range methods {
		switch {
		case strings.HasPrefix(m, "rpc."):
			return nil, invalidParams("the rpc.* names are reserved: " + quote(m))
		case len(m) > maxLen:
			return nil, invalidParams(fmt.Sprintf("method name or pattern longer than %d bytes: %s", maxLen, quote(m)))
		case !validTopic(m, true, maxLen):
			return nil, invalidParams("invalid method name or pattern: " + quote(m))
		}
		if !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	return out, nil
}

// provide adds p's names and patterns, which must be valid. It returns
// errReauthorized, and adds nothing, when p was reauthorized since gen
// was read (see reauth.gen).
func (h *Hub) provide(p *Peer, methods []string, gen uint64) error {
	r := &h.routes
	r.mu.Lock()
	defer r.mu.Unlock()
	if p.prov.left {
		return fmt.Errorf("hub: peer %s left: %w", p.id, peer.ErrClosed)
	}
	if p.auth.gen.Load() != gen {
		return errReauthorized
	}
	added := 0
	for _, m := range methods {
		if _, ok := p.prov.patterns[m]; !ok {
			added++
		}
	}
	if len(p.prov.patterns)+added > maxProvided {
		return peer.Errorf(peer.CodeOverloaded, "Overloaded: more than %d methods provided", maxProvided)
	}
	if added == 0 {
		return nil
	}
	if p.prov.patterns == nil {
		p.prov.patterns = make(map[string]*subscription)
		if r.providers == nil {
			r.providers = make(map[*Peer]struct{})
		}
		r.providers[p] = struct{}{}
	}
	for _, m := range methods {
		if _, ok := p.prov.patterns[m]; !ok {
			p.prov.patterns[m] = r.root.insert(p, m)
		}
	}
	r.entries.Add(int64(added))
	p.prov.gen++
	return nil
}

// unprovide withdraws p's names and patterns and returns those it had.
func (h *Hub) unprovide(p *Peer, methods []string) []string {
	r := &h.routes
	r.mu.Lock()
	defer r.mu.Unlock()
	removed := []string{}
	for _, m := range methods {
		if s, ok := p.prov.patterns[m]; ok {
			s.remove()
			delete(p.prov.patterns, m)
			removed = append(removed, m)
		}
	}
	r.entries.Add(-int64(len(removed)))
	if len(removed) > 0 && len(p.prov.patterns) == 0 {
		r.dropLocked(p)
	}
	return removed
}

// unprovideAll withdraws everything p provides, for good: p left.
func (h *Hub) unprovideAll(p *Peer) {
	r := &h.routes
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(p.prov.patterns) > 0 {
		defer h.changed()
	}
	p.prov.left = true
	for _, s := range p.prov.patterns {
		s.remove()
	}
	r.entries.Add(-int64(len(p.prov.patterns)))
	r.dropLocked(p)
}

// dropLocked forgets p as a provider.
func (r *routes) dropLocked(p *Peer) {
	delete(r.providers, p)
	p.prov.patterns = nil
	p.prov.methods = nil
	p.prov.described = 0
}

// Provided returns the method names and patterns the peer provides,
// sorted.
func (p *Peer) Provided() []string {
	r := &p.h.routes
	r.mu.RLock()
	methods := make([]string, 0, len(p.prov.patterns))
	for m := range p.prov.patterns {
		methods = append(methods, m)
	}
	r.mu.RUnlock()
	sort.Strings(methods)
	return methods
}

// provWatchers holds the functions of WatchProvided. Telling them takes
// no lock: a hub without any pays one atomic load per change.
type provWatchers struct {
	mu  sync.Mutex
	fns atomic.Pointer[[]*func()] // copied on write, under mu
}

// notify calls each function watching. It may run with the routes' lock
// held: the functions must not block.
func (w *provWatchers) notify() {
	if fns := w.fns.Load(); fns != nil {
		for _, fn := range *fns {
			(*fn)()
		}
	}
}

// WatchProvided calls fn each time the methods that peers provide may
// have changed: a peer of this hub provides, withdraws or leaves, or, in a
// cluster, the Directory tells that another node's peers did
// ([BrokerHandle.RemoteProvidedChanged]). fn runs on the goroutine that
// made the change, possibly with the hub's locks held: it must not block
// nor call the hub (signal a goroutine of your own instead). stop ends
// the watch: fn is not called for the changes made after it returns (one
// under way meanwhile may still call it). A hub watched by no one pays
// one atomic load per change.
func (h *Hub) WatchProvided(fn func()) (stop func()) {
	w := &h.routes.watch
	key := &fn
	w.mu.Lock()
	var fns []*func()
	if old := w.fns.Load(); old != nil {
		fns = append(fns, *old...)
	}
	fns = append(fns, key)
	w.fns.Store(&fns)
	w.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			var rest []*func()
			for _, f := range *w.fns.Load() {
				if f != key {
					rest = append(rest, f)
				}
			}
			if len(rest) == 0 {
				w.fns.Store(nil)
			} else {
				w.fns.Store(&rest)
			}
		})
	}
}

// RemoteProvidedChanged tells the hub that the methods the peers of
// another node provide changed, for [Hub.WatchProvided]. A [Directory]
// calls it when it learns so; it does not block.
func (b *BrokerHandle) RemoteProvidedChanged() { b.h.routes.watch.notify() }

// A ProvidedLister is a [Directory] that also lists the names and
// patterns the peers of the other nodes provide, for [Hub.ProvidedNames].
type ProvidedLister interface {
	Directory

	// RemoteProvided returns the names and patterns the peers of the
	// other nodes provide, as far as the directory knows, in any order,
	// possibly with repeats.
	RemoteProvided() []string
}

// ProvidedNames returns the method names and patterns that peers
// provide, sorted, each once: those of this hub's peers and, when its
// Broker is a [ProvidedLister], those of the other nodes' peers.
func (h *Hub) ProvidedNames() []string {
	r := &h.routes
	seen := make(map[string]bool)
	r.mu.RLock()
	for p := range r.providers {
		for m := range p.prov.patterns {
			seen[m] = true
		}
	}
	r.mu.RUnlock()
	if l, ok := h.o.Broker.(ProvidedLister); ok {
		for _, m := range l.RemoteProvided() {
			seen[m] = true
		}
	}
	out := make([]string, 0, len(seen))
	for m := range seen {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}
