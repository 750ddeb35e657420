package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/switchboard-rpc/switchboard/internal/openrpc"
	"github.com/switchboard-rpc/switchboard/internal/wildcard"
	"github.com/switchboard-rpc/switchboard/peer"
	"go.uber.org/zap"
)

// Provision is a method, or a pattern of methods, that a client serves to
// the other peers of its hub (see [Client.Provide]). It lasts across
// reconnections until Withdraw, Close, or the client's Close.
type Provision struct {
	c      *Client
	method string
	h      peer.Handler
	doc    *Description // nil: none given
}

// Method returns the name or pattern the provision was made with.
func (p *Provision) Method() string { return p.method }

type methodsParams struct {
	Methods []string `json:"methods"`
}

// Provide serves method to every other peer of the hub: the hub forwards
// their calls of it to this client, which answers them with h, and passes
// the answers back. method is a name ("billing.charge") or a pattern of
// dot-separated words where "*" stands for one word and a final ">" for
// one or more ("billing.*"); h serves every call that matches it, and
// req.Method tells which. Names starting with "rpc." cannot be provided.
//
// Provide registers h, then tells the hub (rpc.provide) and returns once
// the hub has accepted. A refusal is a *peer.Error: -32001 when the hub's
// policy denies it, -32602 for a malformed name. If ctx ends first, the
// provision is taken back (rpc.unprovide). After a reconnection the client
// provides its methods again by itself.
//
// Calls reach h as the hub's calls do: concurrently, with rpc.cancel
// ending ctx and [peer.Progress] reaching the caller. A method that
// Options.Router serves too is served by the Router. For rpc.discover,
// which the hub relays to its peers, a method provided by name is
// described as a peer.Mux would describe h (with JSON Schemas when h is a
// [peer.Func]); the methods behind a pattern are described when
// Options.Router, a peer.Mux say, lists them. [Client.ProvideDescribed]
// describes it more: a summary, and the params' descriptions or schema.
func (c *Client) Provide(ctx context.Context, method string, h peer.Handler) (*Provision, error) {
	return c.provide(ctx, method, h, nil)
}

func (c *Client) provide(ctx context.Context, method string, h peer.Handler, doc *Description) (*Provision, error) {
	switch {
	case h == nil:
		return nil, errors.New("client: Provide with a nil handler")
	case method == "" || strings.HasPrefix(method, "rpc."):
		return nil, fmt.Errorf("client: cannot provide %q", method)
	}
	p := &Provision{c: c, method: method, h: h, doc: doc}
	// order keeps this rpc.provide and the rpc.unprovide of an earlier
	// provision of the same method in the order they were made.
	c.prov.order.Lock()
	defer c.prov.order.Unlock()
	c.mu.Lock()
	closed, err := c.closed, c.err
	c.mu.Unlock()
	if closed {
		return nil, err
	}
	// Registered before the hub is told, so that the first call it
	// forwards finds the handler.
	if !c.prov.add(p) {
		return nil, fmt.Errorf("client: %s is provided already", method)
	}
	if err := c.Call(ctx, "rpc.provide", methodsParams{[]string{method}}, nil); err != nil {
		c.prov.remove(p)
		if ctx.Err() != nil {
			// The hub may have applied it after we stopped waiting.
			nctx, cancel := context.WithTimeout(c.ctx, c.o.DialTimeout)
			_ = c.Notify(WithFailFast(nctx, true), "rpc.unprovide", methodsParams{[]string{method}})
			cancel()
		}
		return nil, err
	}
	return p, nil
}

// Withdraw tells the hub to stop forwarding calls of the method
// (rpc.unprovide) and waits for its answer, then stops serving them;
// calls in flight finish. While the client is disconnected there is
// nothing to tell: the method is simply not provided again.
func (p *Provision) Withdraw(ctx context.Context) error {
	c := p.c
	c.prov.order.Lock()
	defer c.prov.order.Unlock()
	if !c.prov.has(p) {
		return nil
	}
	err := c.Call(WithFailFast(ctx, true), "rpc.unprovide", methodsParams{[]string{p.method}}, nil)
	c.prov.remove(p)
	if errors.Is(err, ErrDisconnected) || errors.Is(err, ErrClosed) || errors.Is(err, ErrConnectionLost) {
		return nil // the hub forgets what a connection provided with it
	}
	return err
}

// Close is Withdraw bounded by Options.DialTimeout, for defer.
func (p *Provision) Close() error {
	ctx, cancel := context.WithTimeout(p.c.ctx, p.c.o.DialTimeout)
	defer cancel()
	return p.Withdraw(ctx)
}

// provisions are a client's provided methods. Lookups read an immutable
// snapshot without locking, as peer.Mux does.
type provisions struct {
	order sync.Mutex // held across rpc.provide and rpc.unprovide
	mu    sync.Mutex // guards all and writes of snap
	all   map[string]*Provision
	snap  atomic.Pointer[provided]
}

// provided is a snapshot of the provisions, for lookups.
type provided struct {
	exact    map[string]peer.Handler
	patterns []*Provision // with wildcards, by method
	// docs are the descriptions of exact names, when given.
	docs map[string]*Description
	// described serves the exact names, for rpc.discover: made on the
	// first rpc.discover of this snapshot, as it takes a while with many.
	once      sync.Once
	described *peer.Mux
}

// describer returns the Mux that describes the exact names.
func (s *provided) describer() *peer.Mux {
	s.once.Do(func() {
		names := make([]string, 0, len(s.exact))
		for m := range s.exact {
			names = append(names, m)
		}
		sort.Strings(names)
		s.described = peer.NewMux()
		for _, m := range names {
			s.described.Handle(m, s.exact[m])
		}
	})
	return s.described
}

func (ps *provisions) add(p *Provision) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if _, dup := ps.all[p.method]; dup {
		return false
	}
	if ps.all == nil {
		ps.all = make(map[string]*Provision)
	}
	ps.all[p.method] = p
	ps.publishLocked()
	return true
}

func (ps *provisions) has(p *Provision) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.all[p.method] == p
}

func (ps *provisions) remove(p *Provision) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.all[p.method] == p {
		delete(ps.all, p.method)
		ps.publishLocked()
	}
}

// methods returns the provided names and patterns, sorted.
func (ps *provisions) methods() []string {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	methods := make([]string, 0, len(ps.all))
	for m := range ps.all {
		methods = append(methods, m)
	}
	sort.Strings(methods)
	return methods
}

// publishLocked builds the snapshot lookups read.
func (ps *provisions) publishLocked() {
	if len(ps.all) == 0 {
		ps.snap.Store(nil)
		return
	}
	s := &provided{exact: make(map[string]peer.Handler)}
	for m, p := range ps.all {
		if !hasWildcard(m) {
			s.exact[m] = p.h
			if p.doc != nil {
				if s.docs == nil {
					s.docs = make(map[string]*Description)
				}
				s.docs[m] = p.doc
			}
			continue
		}
		s.patterns = append(s.patterns, p)
	}
	sort.Slice(s.patterns, func(i, j int) bool { return s.patterns[i].method < s.patterns[j].method })
	ps.snap.Store(s)
}

func hasWildcard(method string) bool {
	for w := range strings.SplitSeq(method, ".") {
		if w == "*" || w == ">" {
			return true
		}
	}
	return false
}

// lookup finds the handler of method among the provisions, after the
// user's Router found h (nil: none). rpc.discover adds the provided names
// to the user's document.
func (ps *provisions) lookup(method string, h peer.Handler, mode peer.Mode) (peer.Handler, peer.Mode) {
	s := ps.snap.Load()
	switch {
	case s == nil:
		return h, mode
	case method == "rpc.discover":
		if len(s.exact) == 0 {
			return h, mode
		}
		return &discoverHandler{user: h, provided: s.describer(), docs: s.docs}, peer.Concurrent
	case h != nil:
		return h, mode
	}
	if h := s.exact[method]; h != nil {
		return h, peer.Concurrent
	}
	for _, p := range s.patterns {
		if wildcard.Match(p.method, method) {
			return p.h, peer.Concurrent
		}
	}
	return nil, peer.Concurrent
}

// discoverHandler answers rpc.discover with the user Router's document
// (if it has one) and the methods provided by name.
type discoverHandler struct {
	user     peer.Handler
	provided *peer.Mux
	docs     map[string]*Description
}

func (d *discoverHandler) ServeRPC(ctx context.Context, req *peer.Request) (any, error) {
	var doc []byte
	if d.user != nil {
		res, err := d.user.ServeRPC(ctx, req)
		if err != nil {
			return nil, err
		}
		if doc, err = json.Marshal(res); err != nil {
			return nil, err
		}
	}
	own, _ := d.provided.Lookup("rpc.discover")
	res, err := own.ServeRPC(ctx, req)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	methods, err := openrpc.Methods(b)
	if err != nil {
		return nil, err
	}
	for i, m := range methods {
		methods[i] = describeMethod(m, d.docs[m.Name])
	}
	out, err := openrpc.Add(doc, methods)
	if err != nil { // the user's document is not one: leave it as it is
		return json.RawMessage(doc), nil
	}
	return out, nil
}

// reprovide provides the client's methods on pc, after a reconnection. A
// method the hub refuses now is logged and stays registered (it receives
// nothing); only a transport error fails the connection attempt.
func (c *Client) reprovide(ctx context.Context, pc *peer.Conn) error {
	methods := c.prov.methods()
	if len(methods) == 0 {
		return nil
	}
	elems := make([]peer.BatchElem, len(methods))
	for i, m := range methods {
		elems[i] = peer.BatchElem{Method: "rpc.provide", Params: methodsParams{[]string{m}}}
	}
	if err := pc.Batch(ctx, elems); err != nil {
		return err
	}
	for i, e := range elems {
		if e.Err == nil {
			continue
		}
		if _, ok := e.Err.(*peer.Error); !ok {
			return e.Err
		}
		c.log.Warn("provision refused after reconnecting", zap.String("method", methods[i]), zap.Error(e.Err))
	}
	return nil
}
