package hub

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/switchboard-rpc/switchboard/peer"
)

// This file holds rpc.whoami and rpc.call: the caller picks the peer, by
// its id, or every peer of a user or of a topic, and calls a method on
// it. The calls take the path of forwarded calls (route.go): Forward to a
// peer of this hub, under an id of its connection's choosing, with
// rpc.progress and rpc.cancel passed through; Directory.Route to a peer
// of another node.

// DefaultMaxAddressed is the default of Options.MaxAddressed.
const DefaultMaxAddressed = 10000

type (
	whoamiHandler  struct{ h *Hub }
	addressHandler struct{ h *Hub }
)

// whoami is the result of rpc.whoami: the caller as presence shows it,
// and its user's word in topics and rules (UserWord).
type whoami struct {
	PeerInfo
	UserWord string `json:"userWord,omitempty"`
}

// ServeRPC answers rpc.whoami with how presence shows the caller. Over
// HTTP POST the caller is the request: it gets an id of its own.
func (w whoamiHandler) ServeRPC(ctx context.Context, _ *peer.Request) (any, error) {
	info := PeerInfo{ID: uuid.NewString(), User: userOf(Identity(ctx)), Node: w.h.node()}
	if p := w.h.PeerFromContext(ctx); p != nil {
		info = p.Info()
	}
	return whoami{info, UserWord(info.User)}, nil
}

// address is what an rpc.call asks: whom (exactly one of peer, user and
// topic), what, and for how long.
type address struct {
	peer, user, topic string
	target            string // what the Policy sees: "peer.<id>", "user.<identity>" or "topic.<topic>", id and identity as UserWord writes them
	call              peer.Request
	timeout           time.Duration // for Forward: not positive means no bound
}

const addressUsage = `rpc.call takes {"peer": id} or {"user": name} or {"topic": topic}, with "method", and optional "params" and "timeout" (ms)`

// readAddress reads the params of an rpc.call.
func (h *Hub) readAddress(params json.RawMessage) (*address, error) {
	// Plain strings, not pointers: an empty address is refused as a
	// missing one, and decoding allocates less.
	var p struct {
		Peer    string          `json:"peer"`
		User    string          `json:"user"`
		Topic   string          `json:"topic"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
		Timeout json.RawMessage `json:"timeout"`
	}
	if form, err := readParams(params, &p, nil); form != paramsByName || err != nil {
		return nil, invalidParams(addressUsage)
	}
	a := &address{timeout: h.o.ForwardTimeout}
	given := 0
	for _, s := range [...]string{p.Peer, p.User, p.Topic} {
		if s != "" {
			given++
		}
	}
	switch {
	case given != 1:
		return nil, invalidParams("exactly one address, not empty: " + addressUsage)
	case p.Peer != "":
		// The caller's strings are names, never patterns: one word
		// each, escaped (UserWord; a UUID stays as it is).
		a.peer, a.target = p.Peer, "peer."+UserWord(p.Peer)
	case p.User != "":
		a.user, a.target = p.User, "user."+UserWord(p.User)
	default:
		if err := h.checkTopic(p.Topic, false); err != nil {
			return nil, err
		}
		a.topic, a.target = p.Topic, "topic."+p.Topic
	}
	switch {
	case p.Method == "":
		return nil, invalidParams("no method: " + addressUsage)
	case strings.HasPrefix(p.Method, "rpc.") && p.Method != "rpc.ping" && p.Method != "rpc.discover":
		return nil, invalidParams("rpc.call cannot call " + quote(p.Method))
	}
	a.call.Method = p.Method
	switch formOf(p.Params) {
	case paramsByName, paramsByPosition:
		a.call.Params = p.Params
	case paramsAbsent:
	default:
		return nil, invalidParams("the params to pass on must be an array or an object")
	}
	if len(p.Timeout) > 0 && string(p.Timeout) != "null" {
		ms, err := strconv.ParseFloat(string(p.Timeout), 64)
		if err != nil || !(ms > 0) {
			return nil, invalidParams("the timeout must be a positive number of milliseconds")
		}
		if d := time.Duration(ms * float64(time.Millisecond)); a.timeout <= 0 || d < a.timeout {
			a.timeout = max(d, time.Millisecond)
		}
	}
	return a, nil
}

// ServeRPC serves rpc.call.
func (ah addressHandler) ServeRPC(ctx context.Context, req *peer.Request) (any, error) {
	h := ah.h
	a, err := h.readAddress(req.Params)
	if err != nil {
		return nil, err
	}
	if err := h.allow(ctx, Address, a.target); err != nil {
		return nil, err
	}
	a.call.ID = req.ID // zero for a notification, which is passed on as one
	if a.peer != "" {
		return h.callPeer(ctx, a)
	}
	return h.callPeers(ctx, a)
}

// callPeer calls a's method on the peer a names, here or on another node.
func (h *Hub) callPeer(ctx context.Context, a *address) (json.RawMessage, error) {
	if p := h.Peer(a.peer); p != nil {
		return h.forwardTo(ctx, p, a)
	}
	d := h.directory()
	if d == nil {
		return nil, errNoSuchPeer(a.peer)
	}
	return h.routeTo(ctx, d, PeerInfo{ID: a.peer}, a)
}

// forwardTo passes a's call on to p, a peer of this hub.
func (h *Hub) forwardTo(ctx context.Context, p *Peer, a *address) (json.RawMessage, error) {
	h.routes.addressed.Add(1)
	if a.call.IsNotification() {
		_, err := p.conn.Forward(ctx, &a.call, a.timeout)
		return nil, err
	}
	h.routes.inflight.Add(1)
	// Where ctx is rpc.call's own, the peer's reader answers the caller
	// (see peer.Conn.Relay).
	return p.conn.Relay(ctx, &a.call, a.timeout, func(res json.RawMessage, err error) (json.RawMessage, error) {
		h.routes.inflight.Add(-1)
		if err != nil {
			return nil, h.forwardError(ctx, err, false)
		}
		return res, nil
	})
}

// routeTo passes a's call on to the peer to of another node.
func (h *Hub) routeTo(ctx context.Context, d Directory, to PeerInfo, a *address) (json.RawMessage, error) {
	call := RemoteCall{Method: a.call.Method, Params: a.call.Params, Notification: a.call.IsNotification(), Peer: to.ID, Node: to.Node}
	if !call.Notification {
		call.Progress = func(data json.RawMessage) { _ = peer.Progress(ctx, data) } // nothing without a request in ctx
	}
	rctx := ctx
	if a.timeout > 0 {
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeout(ctx, a.timeout)
		defer cancel()
	}
	h.routes.addressed.Add(1)
	h.routes.inflight.Add(1)
	res, err := d.Route(rctx, call)
	h.routes.inflight.Add(-1)
	if errors.Is(err, ErrTooLarge) {
		return nil, err
	}
	if err != nil {
		return nil, h.forwardError(ctx, err, true)
	}
	return res, nil
}

// callPeers calls a's method on every peer of a's user or topic, on every
// node, the caller left out, all at once; it answers when the last has.
// The answer is gathered as the peers answer, within the hub's message
// size limit (gathered.go). No call holds a goroutine: each ends in a
// function (peer.Conn.ForwardFunc, Directory.RouteFunc) that takes its
// answer in and counts it done.
func (h *Hub) callPeers(ctx context.Context, a *address) (any, error) {
	actx, cancel := ctx, context.CancelFunc(func() {})
	start := time.Now()
	if a.timeout > 0 {
		// Asking the other nodes for their peers takes at most half the
		// call's time, and the peers get what is left: the answer, which
		// names the nodes that did not say in time, comes within it.
		actx, cancel = context.WithTimeout(ctx, a.timeout/2)
	}
	local, remote, unanswered, err := h.addressees(actx, a)
	cancel()
	if err != nil {
		return nil, err
	}
	if a.timeout > 0 {
		a.timeout = max(a.timeout-time.Since(start), time.Millisecond)
	}
	n := len(local) + len(remote)
	if n > h.o.MaxAddressed {
		err := peer.Errorf(peer.CodeOverloaded, "Overloaded: %s reaches %d peers, more than %d", a.target, n, h.o.MaxAddressed)
		h.refused(ctx, Refusal{Action: Address, Target: a.target, Err: err, Limit: "addressed"})
		return nil, err
	}
	// The peers' rpc.progress is not passed on: the caller could not
	// tell whose it is, and a thousand peers' would swamp it. A context
	// of no request's, ending with ctx, keeps it from being relayed.
	quiet, stop := context.WithCancel(context.Background())
	defer stop()
	defer context.AfterFunc(ctx, stop)()
	var g *gathered
	maxResult := 0
	if !a.call.IsNotification() {
		g = newGathered(n, h.o.MaxMessage-len(a.call.ID.String())-replyEnvelope, unanswered)
		maxResult = g.maxResult()
	}
	var calls sync.WaitGroup
	calls.Add(n)
	ended := func(who PeerInfo, remote bool) func(json.RawMessage, error) {
		return func(res json.RawMessage, err error) {
			h.routes.inflight.Add(-1)
			if err != nil && !errors.Is(err, ErrTooLarge) {
				err = h.forwardError(quiet, err, remote)
			}
			if g != nil {
				g.add(who, res, err)
			}
			calls.Done()
		}
	}
	h.routes.addressed.Add(uint64(n))
	h.routes.inflight.Add(int64(n))
	for _, p := range local {
		p.conn.ForwardFunc(quiet, &a.call, a.timeout, ended(p.Info(), false))
	}
	if len(remote) > 0 {
		rctx := quiet
		if a.timeout > 0 {
			var cancel context.CancelFunc
			rctx, cancel = context.WithTimeout(quiet, a.timeout)
			defer cancel()
		}
		d := h.directory()
		for _, info := range remote {
			call := RemoteCall{Method: a.call.Method, Params: a.call.Params, Notification: a.call.IsNotification(), Peer: info.ID, Node: info.Node, MaxResult: maxResult}
			d.RouteFunc(rctx, call, ended(info, true))
		}
	}
	calls.Wait()
	if g == nil {
		return nil, nil
	}
	return g.answer(), nil
}

// addressees returns the peers of a's user or topic: those of this hub,
// other than the caller, and those of the other nodes, and the nodes that
// did not say which peers they have in time.
func (h *Hub) addressees(ctx context.Context, a *address) (local []*Peer, remote []PeerInfo, unanswered []string, err error) {
	if a.topic != "" {
		local, _ = h.Presence(a.topic) // readAddress checked the topic
	} else {
		local = h.peersOf(a.user)
	}
	if caller := h.PeerFromContext(ctx); caller != nil {
		for i, p := range local {
			if p == caller {
				local = append(local[:i], local[i+1:]...)
				break
			}
		}
	}
	d := h.directory()
	if d == nil {
		return local, nil, nil, nil
	}
	if a.topic != "" {
		remote, err = d.Peers(ctx, a.topic)
	} else {
		remote, err = d.UserPeers(ctx, a.user)
	}
	if ue, ok := errors.AsType[*UnansweredError](err); ok {
		unanswered = ue.Nodes
	} else if err != nil {
		return nil, nil, nil, err
	}
	return local, remote, unanswered, nil
}

func errNoSuchPeer(id string) *peer.Error {
	return peer.Errorf(peer.CodeNoSuchPeer, "No such peer: %s", id)
}
