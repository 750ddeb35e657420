package hub

import (
	"context"
	"errors"
)

// Action is what a peer asks to do with a topic or a provided method.
type Action int

// The actions a Policy decides on.
const (
	Subscribe Action = iota + 1 // rpc.subscribe to a pattern (may hold wildcards), and rpc.history of it
	Publish                     // rpc.publish on a topic
	Provide                     // rpc.provide a method name or pattern (may hold wildcards)
	Call                        // call a method that a peer provides (the method's name)
	Presence                    // rpc.presence of a topic, and "presence": true on rpc.subscribe
	Address                     // rpc.call to chosen peers; the target is "peer.<id>", "user.<identity>" or "topic.<topic>"
)

func (a Action) String() string {
	switch a {
	case Subscribe:
		return "subscribe"
	case Publish:
		return "publish"
	case Provide:
		return "provide"
	case Call:
		return "call"
	case Presence:
		return "presence"
	case Address:
		return "address"
	}
	return "unknown action"
}

// Policy decides whether the peer behind ctx may subscribe to a pattern,
// publish on a topic, see who is subscribed to a topic, provide a method
// (or pattern of methods) to the other peers, or call a method another
// peer provides; the string is the topic,
// pattern or method name. ctx is the request's: [Identity] gives what
// authentication said the caller is. A Policy returns nil to allow; any
// error refuses, and the caller gets -32001 (or the code of a
// *peer.Error). It runs on the reader goroutine of the peer's connection
// (the hub's methods run inline, in arrival order), so it must not block:
// decide from the identity and the topic, or from data already in memory.
type Policy func(ctx context.Context, action Action, topic string) error

// DefaultPolicy lets any peer subscribe to any pattern and call any
// provided method, and refuses every rpc.publish, rpc.provide and
// addressed rpc.call: only the
// server's Go code publishes (Hub.Publish), and a peer serves methods to
// the others only when a Policy says it may. It is the policy of a Hub
// with none set.
func DefaultPolicy(_ context.Context, action Action, _ string) error {
	if action == Subscribe || action == Call {
		return nil
	}
	return errRefused
}

// AllowAll lets any peer subscribe and publish on any topic, and provide
// and call any method (except the reserved rpc.* names). It suits demos,
// tests and trusted networks.
func AllowAll(context.Context, Action, string) error { return nil }

var errRefused = errors.New("hub: not allowed")

// Refusal is a request of a peer that the hub's Policy refused, or that
// went over a limit, as Options.OnRefused is told of it.
type Refusal struct {
	Peer   *Peer  // who asked; nil for a request sent as an HTTP POST
	Action Action // what it asked to do
	Target string // the topic, pattern or method name (for Address, "peer.<id>", "user.<identity>" or "topic.<topic>")
	Err    error  // what the Policy returned, or the error of the limit
	// Limit is "" for a refusal of the Policy; for a request over a limit
	// of Options, the limit: "subscriptions" (MaxSubscriptions; Target
	// holds the patterns asked, comma-separated) or "addressed"
	// (MaxAddressed).
	Limit string
}

type identityKey struct{}

// WithIdentity returns a context carrying the identity authentication
// established for a connection or an HTTP request. Servers call it; policies
// and handlers read it back with [Identity].
func WithIdentity(ctx context.Context, identity any) context.Context {
	return context.WithValue(ctx, identityKey{}, identity)
}

// Identity returns the identity stored by [WithIdentity], or nil.
func Identity(ctx context.Context) any {
	return ctx.Value(identityKey{})
}
