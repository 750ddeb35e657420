package membroker

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/internal/wildcard"
	"github.com/switchboard-rpc/switchboard/peer"
)

// The broker as a hub.Directory: it asks the other nodes' hubs directly,
// through their handles, whenever it is asked.

var (
	errNoProvider   = &peer.Error{Code: peer.CodeMethodNotFound, Message: "Method not found"}
	errProviderLost = &peer.Error{Code: peer.CodeProviderLost, Message: "Provider lost"}
)

// Provides implements hub.Directory.
func (b *Broker) Provides(method string) bool {
	for _, n := range b.c.others(b) {
		for _, p := range n.h.ProvidedMethods() {
			if provides(p, method) {
				return true
			}
		}
	}
	return false
}

func provides(p hub.Provider, method string) bool {
	return slices.ContainsFunc(p.Methods, func(pattern string) bool { return wildcard.Match(pattern, method) })
}

// Route implements hub.Directory. A call of a method goes to the node
// whose least busy provider of it has the fewest calls in flight, whose
// hub then picks among its own providers.
func (b *Broker) Route(ctx context.Context, call hub.RemoteCall) (json.RawMessage, error) {
	var to *Broker
	if call.Peer != "" {
		for _, n := range b.c.others(b) {
			if (call.Node == "" || call.Node == n.name) && n.h.HasPeer(call.Peer) {
				to = n
				break
			}
		}
		if to == nil {
			return nil, peer.Errorf(peer.CodeNoSuchPeer, "No such peer: %s", call.Peer)
		}
	} else {
		least := -1
		for _, n := range b.c.others(b) {
			for _, p := range n.h.ProvidedMethods() {
				if provides(p, call.Method) && (least < 0 || p.InFlight < least) {
					to, least = n, p.InFlight
				}
			}
		}
		if to == nil {
			return nil, errNoProvider
		}
	}
	return to.serve(ctx, call)
}

// RouteFunc implements hub.Directory, simply: Route, on a goroutine of
// the call's own, whose last act is done, so that whoever waits for done
// waits for it. (hub/natsbroker holds no goroutine for a call.) Progress
// is not passed on.
func (b *Broker) RouteFunc(ctx context.Context, call hub.RemoteCall, done func(json.RawMessage, error)) {
	call.Progress = nil
	go func() { done(b.Route(ctx, call)) }()
}

// serve serves a call of another node on b's hub, as if it had crossed a
// network: the params and the result are b's own copies, and the call
// ends with -32006 when b is closed first.
func (b *Broker) serve(ctx context.Context, call hub.RemoteCall) (json.RawMessage, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(b.ctx, cancel)
	defer stop()
	call.Params = slices.Clone(call.Params)
	res, err := b.h.ServeRemoteCall(ctx, call)
	if b.ctx.Err() != nil {
		return nil, errProviderLost
	}
	if err != nil {
		return nil, err
	}
	if call.MaxResult > 0 && len(res) > call.MaxResult {
		return nil, fmt.Errorf("membroker: a result of %d bytes, over %d: %w", len(res), call.MaxResult, hub.ErrTooLarge)
	}
	return slices.Clone(res), nil
}

// Peers implements hub.Directory.
func (b *Broker) Peers(_ context.Context, topic string) ([]hub.PeerInfo, error) {
	var out []hub.PeerInfo
	for _, n := range b.c.others(b) {
		out = append(out, n.h.LocalPeers(topic)...)
	}
	return out, nil
}

// UserPeers implements hub.Directory.
func (b *Broker) UserPeers(_ context.Context, user string) ([]hub.PeerInfo, error) {
	var out []hub.PeerInfo
	for _, n := range b.c.others(b) {
		out = append(out, n.h.LocalUserPeers(user)...)
	}
	return out, nil
}

// UserChanged implements hub.Directory. It does nothing: the other nodes
// ask this one's hub for its peers when they need them.
func (b *Broker) UserChanged(bool, hub.PeerInfo) {}

// Changed implements hub.Directory. It does nothing: the other nodes ask
// this one's hub what its peers provide when they need to know.
func (b *Broker) Changed() {}

// PresenceChanged implements hub.Directory: the change is queued for
// every other node.
func (b *Broker) PresenceChanged(join bool, who hub.PeerInfo, changed, others []string) {
	b.presenceChanged(join, who, changed, others)
}

// DescribeRemote implements hub.Describer.
func (b *Broker) DescribeRemote(ctx context.Context) []json.RawMessage {
	var out []json.RawMessage
	for _, n := range b.c.others(b) {
		out = append(out, n.h.DescribeProvided(ctx)...)
	}
	return out
}
