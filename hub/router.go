package hub

import (
	"context"
	"errors"
	"strconv"

	"github.com/switchboard-rpc/switchboard/peer"
)

// Router returns a peer.Router that answers the hub's methods
// (rpc.subscribe, rpc.unsubscribe, rpc.publish, rpc.provide,
// rpc.unprovide), hands every other method to app (which may be nil), and
// forwards the methods app does not serve to the peers that provide them.
// rpc.discover is app's, with the provided methods added.
//
// The hub's methods run [peer.Inline], on the reader of the peer's connection: they take no in-flight slot, so a burst of
// rpc.publish notifications is never dropped, and a peer's subscribes,
// unsubscribes and publishes take effect in the order it sent them; a
// peer that subscribes and then publishes, without waiting in between,
// receives its own event. They are quick (fan-out never waits), but the
// Policy runs there too, so it must not block.
func (h *Hub) Router(app peer.Router) peer.Router {
	return router{h: h, app: app}
}

type router struct {
	h   *Hub
	app peer.Router
}

func (r router) Lookup(method string) (peer.Handler, peer.Mode) {
	switch method {
	case "rpc.subscribe":
		return r.h.handlers.subscribe, peer.Inline
	case "rpc.unsubscribe":
		return r.h.handlers.unsubscribe, peer.Inline
	case "rpc.publish":
		return r.h.handlers.publish, peer.Inline
	case "rpc.history":
		return r.h.handlers.history, peer.Concurrent
	case "rpc.presence":
		return r.h.handlers.presence, peer.Concurrent
	case "rpc.whoami":
		return whoamiHandler{r.h}, peer.Inline
	case "rpc.call":
		return addressHandler{r.h}, peer.Concurrent
	}
	return r.h.lookup(r.app, method) // the app's methods, then the provided ones
}

// caller returns the peer making a request, or an error when there is none
// (HTTP POST): topic subscriptions need a connection to deliver to.
func (h *Hub) caller(ctx context.Context, method string) (*Peer, error) {
	if p := h.PeerFromContext(ctx); p != nil {
		return p, nil
	}
	return nil, peer.Errorf(peer.CodeApplication, "%s needs a WebSocket connection to deliver events to", method)
}

// allow asks the policy about a peer's request, turning a refusal into
// -32001 and reporting it to Options.OnRefused.
func (h *Hub) allow(ctx context.Context, a Action, topic string) error {
	err := h.o.Policy(ctx, a, topic)
	if err == nil {
		return nil
	}
	h.refused(ctx, Refusal{Action: a, Target: topic, Err: err})
	if e, ok := errors.AsType[*peer.Error](err); ok {
		return e
	}
	return peer.Errorf(peer.CodeUnauthorized, "Unauthorized: %s %s", a, quote(topic))
}

// refused reports r, made by the peer of ctx, to Options.OnRefused.
func (h *Hub) refused(ctx context.Context, r Refusal) {
	if h.o.OnRefused == nil {
		return
	}
	r.Peer = h.PeerFromContext(ctx)
	h.o.OnRefused(ctx, r)
}

func invalidParams(msg string) *peer.Error {
	return peer.Errorf(peer.CodeInvalidParams, "Invalid params: %s", msg)
}

// quote quotes a topic for an error message, shortening a long one. The
// message is text, not HTML: ">" stays as it is.
func quote(s string) string {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return strconv.Quote(s)
}
