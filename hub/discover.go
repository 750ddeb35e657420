package hub

import (
	"context"
	"encoding/json"
	"sort"
	"sync"
	"time"

	"github.com/switchboard-rpc/switchboard/internal/jsonx"
	"github.com/switchboard-rpc/switchboard/internal/openrpc"
	"github.com/switchboard-rpc/switchboard/peer"
)

// This file answers rpc.discover on the hub: the application's methods,
// and the methods peers provide, as their providers describe them.

// discoverTimeout bounds the hub's rpc.discover call to a provider.
const discoverTimeout = 2 * time.Second

type describedMethod = openrpc.Method

// discoverHandler answers rpc.discover: app's document (own is app's
// rpc.discover handler, nil if it has none) with the provided methods
// added.
type discoverHandler struct {
	h   *Hub
	app peer.Router
	own peer.Handler
}

func (d *discoverHandler) ServeRPC(ctx context.Context, req *peer.Request) (any, error) {
	var doc []byte
	if d.own != nil {
		res, err := d.own.ServeRPC(ctx, req)
		if err != nil {
			return nil, err
		}
		if doc, err = jsonx.Marshal(res); err != nil {
			return nil, err
		}
	}
	provided := d.h.describeProvided(ctx, d.app)
	if len(provided) == 0 && doc != nil {
		return json.RawMessage(doc), nil
	}
	out, err := openrpc.Add(doc, provided)
	if err != nil { // app's document is not one: leave it as it is
		return json.RawMessage(doc), nil
	}
	return out, nil
}

// describeProvided returns the descriptions of the methods peers provide,
// on this node and, in a cluster, on the others, as their providers
// describe them: those that app does not serve itself and that the Policy
// lets the caller behind ctx call. A method provided both here and on
// another node is described by the provider here.
func (h *Hub) describeProvided(ctx context.Context, app peer.Router) []describedMethod {
	var remote []json.RawMessage
	var wg sync.WaitGroup
	if d, ok := h.o.Broker.(Describer); ok {
		wg.Go(func() { remote = d.DescribeRemote(ctx) })
	}
	local := h.describeLocal(ctx)
	wg.Wait()
	for _, raw := range remote {
		var m struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(raw, &m) == nil && m.Name != "" {
			local = append(local, describedMethod{Name: m.Name, JSON: raw})
		}
	}

	var out []describedMethod
	seen := make(map[string]bool)
	for _, m := range local {
		if seen[m.Name] || !h.forwardable(m.Name) {
			continue
		}
		if app != nil {
			if own, _ := app.Lookup(m.Name); own != nil {
				continue // the server's own method: never forwarded
			}
		}
		if h.o.Policy(ctx, Call, m.Name) != nil {
			continue
		}
		seen[m.Name] = true
		out = append(out, m)
	}
	return out
}

// describeLocal returns the methods this hub's peers provide, as each
// provider's rpc.discover gives them, each name once: those of its
// methods that match the names and patterns it provides. A provider is
// asked once for what it provides, and again after it provides more; one
// that does not answer within discoverTimeout describes nothing.
func (h *Hub) describeLocal(ctx context.Context) []describedMethod {
	r := &h.routes
	type provider struct {
		p       *Peer
		gen     uint64
		methods []describedMethod
		ask     bool // not described since it last provided more
		learnt  bool // asked, and the answer is worth keeping
	}
	r.mu.RLock()
	ps := make([]provider, 0, len(r.providers))
	for p := range r.providers {
		ps = append(ps, provider{p: p, gen: p.prov.gen, methods: p.prov.methods,
			ask: p.prov.described != p.prov.gen})
	}
	r.mu.RUnlock()
	sort.Slice(ps, func(i, j int) bool { return ps[i].p.id < ps[j].p.id })

	var wg sync.WaitGroup
	for i := range ps {
		if ps[i].ask {
			wg.Go(func() { ps[i].methods, ps[i].learnt = describe(ctx, ps[i].p.conn) })
		}
	}
	wg.Wait()
	r.mu.Lock()
	for _, pr := range ps {
		if pr.learnt && pr.p.prov.gen == pr.gen && pr.p.prov.patterns != nil {
			pr.p.prov.described, pr.p.prov.methods = pr.gen, pr.methods
		}
	}
	r.mu.Unlock()

	var out []describedMethod
	seen := make(map[string]bool)
	for _, pr := range ps {
		for _, m := range pr.methods {
			if seen[m.Name] || !h.providedBy(pr.p, m.Name) {
				continue
			}
			seen[m.Name] = true
			out = append(out, m)
		}
	}
	return out
}

// describe asks a provider for its rpc.discover document and returns its
// methods. learnt is false when the answer says nothing about the
// provider (the caller gave up, or the provider left): ask again next
// time. A provider that answers with an error, or not in time, describes
// nothing.
func describe(ctx context.Context, c *peer.Conn) (methods []describedMethod, learnt bool) {
	dctx, cancel := context.WithTimeout(ctx, discoverTimeout)
	defer cancel()
	var doc json.RawMessage
	if err := c.Call(dctx, "rpc.discover", nil, &doc); err != nil {
		return nil, ctx.Err() == nil && !closing(c)
	}
	methods, _ = openrpc.Methods(doc)
	return methods, true
}

// providedBy reports whether p provides method, by name or pattern.
func (h *Hub) providedBy(p *Peer, method string) bool {
	r := &h.routes
	var buf [8]*node
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, n := range r.root.match(buf[:0], method) {
		for _, s := range n.subs {
			if s.p == p {
				return true
			}
		}
	}
	return false
}
