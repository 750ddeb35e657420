package hub

import (
	"github.com/switchboard-rpc/switchboard/peer"
)

// This file is the one list of the built-in methods: the names starting
// with "rpc.", which the wire protocol reserves. The router serves the
// hub's from it (router.go), hub/rules reads from it which methods every
// peer may call, and a test checks it against docs/protocol.md and
// against what a server answers.

// Where a built-in method is answered ([Builtin].Home).
const (
	// HomePeer: package peer answers it on every connection, before any
	// router is asked (rpc.ping, rpc.cancel, rpc.progress).
	HomePeer = "peer"
	// HomeHub: the router of [Hub.Router] answers it.
	HomeHub = "hub"
	// HomeServer: package server answers it, before the hub's router
	// (rpc.auth).
	HomeServer = "server"
	// HomeClient: the hub sends it, and the peers answer it (rpc.event,
	// rpc.join, ...); a peer that sends it to the hub gets -32601.
	HomeClient = "client"
)

// A Builtin is one of the methods the protocol reserves.
type Builtin struct {
	Name string
	// Call and Notification say how it is sent: as a call, as a
	// notification, or either.
	Call, Notification bool
	// Action is what the hub asks the [Policy] before it serves the
	// method, on the topic, method or address the request names; 0 when
	// it asks nothing: every peer may call it. rpc.subscribe asks
	// [Presence] too, when it asks for presence changes.
	Action Action
	// Home is what answers it: [HomePeer], [HomeHub], [HomeServer] or
	// [HomeClient].
	Home string
}

// builtin is a Builtin with how the hub's router serves it: the handler
// (given the hub and the application's router) and its mode. Methods
// that take effect in the order a peer sends them (topics, provisions)
// run inline, on the reader of the peer's connection; those that may
// wait (for the store, for the other nodes, for the peers they call)
// run concurrently.
type builtin struct {
	Builtin
	serve func(h *Hub, app peer.Router) peer.Handler
	mode  peer.Mode
}

// builtins is the table, in the order of docs/protocol.md.
var builtins = [...]builtin{
	{Builtin: Builtin{Name: "rpc.subscribe", Call: true, Action: Subscribe, Home: HomeHub},
		serve: func(h *Hub, _ peer.Router) peer.Handler { return h.handlers.subscribe }, mode: peer.Inline},
	{Builtin: Builtin{Name: "rpc.unsubscribe", Call: true, Home: HomeHub},
		serve: func(h *Hub, _ peer.Router) peer.Handler { return h.handlers.unsubscribe }, mode: peer.Inline},
	{Builtin: Builtin{Name: "rpc.publish", Call: true, Notification: true, Action: Publish, Home: HomeHub},
		serve: func(h *Hub, _ peer.Router) peer.Handler { return h.handlers.publish }, mode: peer.Inline},
	{Builtin: Builtin{Name: "rpc.event", Notification: true, Home: HomeClient}},
	{Builtin: Builtin{Name: "rpc.history", Call: true, Action: Subscribe, Home: HomeHub},
		serve: func(h *Hub, _ peer.Router) peer.Handler { return h.handlers.history }, mode: peer.Concurrent},
	{Builtin: Builtin{Name: "rpc.presence", Call: true, Action: Presence, Home: HomeHub},
		serve: func(h *Hub, _ peer.Router) peer.Handler { return h.handlers.presence }, mode: peer.Concurrent},
	{Builtin: Builtin{Name: "rpc.join", Notification: true, Home: HomeClient}},
	{Builtin: Builtin{Name: "rpc.leave", Notification: true, Home: HomeClient}},
	{Builtin: Builtin{Name: "rpc.missed", Notification: true, Home: HomeClient}},
	{Builtin: Builtin{Name: "rpc.cancel", Notification: true, Home: HomePeer}},
	{Builtin: Builtin{Name: "rpc.progress", Notification: true, Home: HomePeer}},
	{Builtin: Builtin{Name: "rpc.ping", Call: true, Home: HomePeer}},
	{Builtin: Builtin{Name: "rpc.discover", Call: true, Home: HomeHub},
		serve: newDiscoverHandler, mode: peer.Concurrent},
	{Builtin: Builtin{Name: "rpc.provide", Call: true, Action: Provide, Home: HomeHub},
		serve: func(h *Hub, _ peer.Router) peer.Handler { return provideHandler{h} }, mode: peer.Inline},
	{Builtin: Builtin{Name: "rpc.unprovide", Call: true, Home: HomeHub},
		serve: func(h *Hub, _ peer.Router) peer.Handler { return unprovideHandler{h} }, mode: peer.Inline},
	{Builtin: Builtin{Name: "rpc.auth", Call: true, Home: HomeServer}},
	{Builtin: Builtin{Name: "rpc.revoked", Notification: true, Home: HomeClient}},
	{Builtin: Builtin{Name: "rpc.whoami", Call: true, Home: HomeHub},
		serve: func(h *Hub, _ peer.Router) peer.Handler { return whoamiHandler{h} }, mode: peer.Inline},
	{Builtin: Builtin{Name: "rpc.call", Call: true, Notification: true, Action: Address, Home: HomeHub},
		serve: func(h *Hub, _ peer.Router) peer.Handler { return addressHandler{h} }, mode: peer.Concurrent},
}

// builtinIndex finds a method in builtins.
var builtinIndex = func() map[string]*builtin {
	m := make(map[string]*builtin, len(builtins))
	for i := range builtins {
		m[builtins[i].Name] = &builtins[i]
	}
	return m
}()

// Builtins returns the built-in methods, in the order the protocol's
// documentation lists them. The slice is the caller's.
func Builtins() []Builtin {
	out := make([]Builtin, len(builtins))
	for i := range builtins {
		out[i] = builtins[i].Builtin
	}
	return out
}

// BuiltinMethod returns the built-in method of the given name, and
// whether there is one.
func BuiltinMethod(name string) (Builtin, bool) {
	if b := builtinIndex[name]; b != nil {
		return b.Builtin, true
	}
	return Builtin{}, false
}

// Open reports whether every peer may call the method: the hub or the
// server answers it when a peer sends it, and asks no [Policy] first.
func (b Builtin) Open() bool {
	return b.Action == 0 && b.Home != HomeClient
}

// newDiscoverHandler answers rpc.discover: the application's document
// (app's own rpc.discover, as [peer.Mux] answers it) with the methods
// peers provide added.
func newDiscoverHandler(h *Hub, app peer.Router) peer.Handler {
	var own peer.Handler
	if app != nil {
		own, _ = app.Lookup("rpc.discover")
	}
	return &discoverHandler{h: h, app: app, own: own}
}
