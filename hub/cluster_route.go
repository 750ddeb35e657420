package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/switchboard-rpc/switchboard/internal/jsonx"
	"github.com/switchboard-rpc/switchboard/peer"
)

// This file makes the peers of every node of a cluster addressable from
// any node: calls of provided methods reach providers on other nodes,
// presence covers every node, and Go code can list and call the peers of
// the whole cluster. The hub itself knows nothing of the network: a
// Broker that is also a [Directory] (hub/natsbroker) does the talking.

// directory returns the hub's Broker as a Directory, or nil.
func (h *Hub) directory() Directory {
	d, _ := h.o.Broker.(Directory)
	return d
}

// node returns the name of the hub's node, "" for a hub alone.
func (h *Hub) node() string {
	if h.o.Broker == nil {
		return ""
	}
	return h.o.Broker.Node()
}

// serveRemoteCall serves a call that another node of the cluster sends to
// this hub: to a peer of this hub that provides call.Method (the one with
// the fewest forwarded calls in flight), or, with call.Peer set, to that
// peer. It takes the path of a local caller's forwarded call
// ([peer.Conn.Forward]): Shutdown waits for it, and when ctx is cancelled
// the peer is sent rpc.cancel and its own answer (normally -32002) is
// returned. It returns the peer's answer unchanged: the raw result, or
// its *peer.Error. Its own answers are -32601 (no such provider), -32007
// (no such peer here), -32003 (every provider stayed at
// Options.MaxForwards for the forward timeout, or ctx's deadline passed),
// -32005 (the peer's connection is shutting down) and -32006 (the peer
// disconnected before answering). A Directory calls it; ctx carries the
// caller's cancellation and deadline.
func (h *Hub) serveRemoteCall(ctx context.Context, call RemoteCall) (json.RawMessage, error) {
	var p *Peer
	if call.Peer != "" {
		if p = h.Peer(call.Peer); p == nil {
			return nil, errNoSuchPeer(call.Peer)
		}
	} else {
		var err error
		if p, _, err = h.pickWait(ctx, call.Method, nil, !call.Notification); err != nil { // ctx bounds the call
			return nil, err
		}
		h.routes.count(call.Method)
		if !call.Notification {
			defer h.unpick(p)
		}
	}
	req := &peer.Request{Method: call.Method, Params: call.Params}
	if call.Notification {
		_, err := p.conn.Forward(ctx, req, 0)
		return nil, err
	}
	// The same path as a local caller's (see forwardHandler), so that
	// Shutdown waits for the call and a cancel gets the peer's answer.
	req.ID = remoteID
	var timeout time.Duration
	if deadline, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(deadline), time.Millisecond)
	}
	ctx = peer.WithProgress(ctx, call.Progress) // a caller waits: see Forward
	if call.Peer != "" {
		h.routes.inflight.Add(1) // pickWait counted the others
		defer h.routes.inflight.Add(-1)
	}
	res, err := p.conn.Forward(ctx, req, timeout)
	if err != nil {
		return nil, h.forwardError(ctx, err, false)
	}
	return res, nil
}

// remoteID is the id of a call from another node: Forward sends a call
// under an id of its own, whatever the request's, as long as it has one.
var remoteID = func() (id peer.ID) {
	_ = id.UnmarshalJSON([]byte("0"))
	return id
}()

// localPeers returns how this hub's peers show in presence, with their
// node: those an event on topic would reach, or with topic "" all of
// them.
func (h *Hub) localPeers(topic string) []PeerInfo {
	var peers []*Peer
	if topic == "" {
		peers = h.Peers()
	} else {
		var err error
		if peers, err = h.Presence(topic); err != nil {
			return nil
		}
	}
	out := make([]PeerInfo, len(peers))
	for i, p := range peers {
		out[i] = p.Info()
	}
	return out
}

// localUserPeers returns how this hub's peers of user show in presence.
func (h *Hub) localUserPeers(user string) []PeerInfo {
	peers := h.peersOf(user)
	out := make([]PeerInfo, len(peers))
	for i, p := range peers {
		out[i] = p.Info()
	}
	return out
}

// userChanged tells the Directory that p, if it has a user, joined or
// left this hub: the other nodes then know which nodes to ask for the
// peers of a user.
func (h *Hub) userChanged(join bool, p *Peer) {
	if d := h.directory(); d != nil {
		if info := p.Info(); info.User != "" {
			d.UserChanged(join, info)
		}
	}
}

// ClusterPeers returns the peers of every node of the cluster, this one's
// first, each with its node; a hub alone returns its own. Nodes that do
// not answer within ctx (or the Directory's own bound) are left out.
func (h *Hub) ClusterPeers(ctx context.Context) ([]PeerInfo, error) {
	return h.clusterPresence(ctx, "")
}

// ClusterPresence is [Hub.Presence] over every node of the cluster: the
// peers an event published on topic would reach, wherever they are
// connected, sorted by node and id.
func (h *Hub) ClusterPresence(ctx context.Context, topic string) ([]PeerInfo, error) {
	if !validTopic(topic, false, h.o.MaxTopicLength) {
		return nil, fmt.Errorf("%w: %q", ErrInvalidTopic, topic)
	}
	return h.clusterPresence(ctx, topic)
}

func (h *Hub) clusterPresence(ctx context.Context, topic string) ([]PeerInfo, error) {
	local := h.localPeers(topic)
	d := h.directory()
	if d == nil {
		return local, nil
	}
	remote, err := d.Peers(ctx, topic)
	if _, partial := errors.AsType[*UnansweredError](err); err != nil && !partial {
		return nil, err // presence leaves out the nodes that did not answer
	}
	all := append(local, remote...)
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].Node != all[j].Node {
			return all[i].Node < all[j].Node
		}
		return all[i].ID < all[j].ID
	})
	return all, nil
}

// CallPeer calls method on the peer with the given id, connected to this
// node or, in a cluster, to any other, and decodes its result into result
// (a pointer; nil discards it). It returns the peer's *peer.Error when it
// answers with one, -32007 when no node has that peer, and -32006 when
// the peer or its node is lost before it answers. When ctx ends, the peer
// is sent rpc.cancel. A ctx made with [peer.WithProgress] receives the
// rpc.progress notifications of a peer of this node.
func (h *Hub) CallPeer(ctx context.Context, id, method string, params, result any) error {
	if p := h.Peer(id); p != nil {
		return p.conn.Call(ctx, method, params, result)
	}
	d := h.directory()
	if d == nil {
		return errNoSuchPeer(id)
	}
	raw, err := jsonx.Marshal(params)
	if err != nil {
		return fmt.Errorf("hub: encode params of %s: %w", method, err)
	}
	if params == nil {
		raw = nil
	}
	res, err := d.Route(ctx, RemoteCall{Method: method, Params: raw, Peer: id})
	if err != nil {
		return err
	}
	if result == nil {
		return nil
	}
	if r, ok := result.(*json.RawMessage); ok {
		*r = append((*r)[:0], res...)
		return nil
	}
	if err := json.Unmarshal(res, result); err != nil {
		return fmt.Errorf("hub: decode result of %s: %w", method, err)
	}
	return nil
}

// remotePresenceChanged tells this hub's peers that watch presence that a
// peer of another node joined (or left) the patterns changed, being still
// subscribed to others (so present on whatever they overlap).
func (h *Hub) remotePresenceChanged(join bool, who PeerInfo, changed, others []string) {
	method := "rpc.leave"
	if join {
		method = "rpc.join"
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.watchers.children) == 0 {
		return
	}
	var watchers []*subscription
	for _, q := range changed {
		watchers = h.watchers.overlapping(watchers, q)
	}
	told := make(map[*subscription]bool, len(watchers))
outer:
	for _, w := range watchers {
		if told[w] {
			continue
		}
		for _, q := range others {
			if overlap(q, w.pattern) {
				continue outer
			}
		}
		told[w] = true
		_ = h.post(w.p, method, presenceMessage(method, w.pattern, who))
	}
}

// providedMethods returns, for each peer of this hub that provides
// methods, its id, the names and patterns it provides and the forwarded
// calls in flight to it.
func (h *Hub) providedMethods() []Provider {
	r := &h.routes
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Provider, 0, len(r.providers))
	for p := range r.providers {
		pr := Provider{Peer: p.id, InFlight: int(p.prov.inflight.Load())}
		for m := range p.prov.patterns {
			pr.Methods = append(pr.Methods, m)
		}
		sort.Strings(pr.Methods)
		out = append(out, pr)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Peer < out[j].Peer })
	return out
}

// Provider is a peer that provides methods, as the nodes of a cluster
// tell each other.
type Provider struct {
	Peer     string   `json:"peer"`
	Methods  []string `json:"methods"`
	InFlight int      `json:"inflight"`
}

// changed tells the Directory, if any, that provisions changed, and the
// functions of WatchProvided.
func (h *Hub) changed() {
	h.routes.watch.notify()
	if d := h.directory(); d != nil {
		d.Changed()
	}
}
