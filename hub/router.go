package hub

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/switchboard-rpc/switchboard/peer"
)

// This file is where a peer's call reaches the hub. The life of a call
// that a peer sends (read with the code open; each step names the
// function that does it):
//
//  1. The peer's connection reads it (package peer; docs/peer.md has
//     that side). rpc.ping, rpc.cancel and rpc.progress are answered
//     there, on every connection: no router sees them.
//  2. The connection's Router finds the handler. A server's serves
//     rpc.auth itself (package server), then asks the router of
//     [Hub.Router]: router.Lookup below.
//  3. router.Lookup serves a built-in method of the hub from the table
//     in builtin.go, in its mode: rpc.subscribe (subscribe.go),
//     rpc.publish (publish.go), rpc.history (history_rpc.go),
//     rpc.presence (presence.go), rpc.provide (provide.go), rpc.discover
//     (discover.go), rpc.whoami and rpc.call (address.go). Any other
//     name goes to the application's router (which a server wraps in
//     its Options.Authorize), then to the peers that provide it
//     (route.go: lookup): forwardHandler relays the call to a peer of
//     this hub ([peer.Conn.Relay]) or, through the [Directory], to one
//     of another node (forwardRemote). A name nobody serves is -32601.
//  4. The handler asks the [Policy] (allow, below) for the action the
//     table names ([Call] with the method's name, for a provided one),
//     on the topic, method or address of the request, and serves it. The hub's inline methods run on the reader of the
//     peer's connection, so a peer's subscribes, publishes and
//     provisions take effect in the order it sent them.
//  5. The answer goes back on the peer's connection; a published event
//     goes to every subscriber's queue without waiting (publish.go) and,
//     in a cluster, to the Broker (broker.go).

// Router returns a peer.Router that answers the hub's built-in methods
// (those of [Builtins] whose Home is [HomeHub]), hands every other method
// to app (which may be nil), and forwards the methods app does not serve
// to the peers that provide them. rpc.discover is app's, with the
// provided methods added.
//
// The hub's topic and provision methods run [peer.Inline], on the reader
// of the peer's connection: they take no in-flight slot, so a burst of
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
	if strings.HasPrefix(method, "rpc.") {
		if b := builtinIndex[method]; b != nil && b.serve != nil {
			return b.serve(r.h, r.app), b.mode
		}
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
