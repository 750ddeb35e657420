package hub

import (
	"context"
	"errors"
)

// Action is what a peer asks to do with a topic.
type Action int

// The actions a Policy decides on.
const (
	Subscribe Action = iota + 1 // rpc.subscribe to a pattern (may hold wildcards), and rpc.history of it
	Publish                     // rpc.publish on a topic
	Presence                    // rpc.presence of a topic, and "presence": true on rpc.subscribe
)

func (a Action) String() string {
	switch a {
	case Subscribe:
		return "subscribe"
	case Publish:
		return "publish"
	case Presence:
		return "presence"
	}
	return "unknown action"
}

// Policy decides whether the peer behind ctx may subscribe to a pattern or
// publish on a topic. ctx is the request's: [Identity] gives what
// authentication said the caller is. Allow returns nil to allow; any error
// refuses, and the caller gets -32001 (or the code of a *peer.Error).
// Allow runs on the reader goroutine of the peer's connection (the hub's
// methods run inline, in arrival order), so it must not block: decide from
// the identity and the topic, or from data already in memory.
type Policy interface {
	Allow(ctx context.Context, action Action, topic string) error
}

// PolicyFunc adapts a function to a Policy.
type PolicyFunc func(ctx context.Context, action Action, topic string) error

// Allow calls f(ctx, action, topic).
func (f PolicyFunc) Allow(ctx context.Context, action Action, topic string) error {
	return f(ctx, action, topic)
}

// ErrRefused is the error DefaultPolicy refuses with.
var ErrRefused = errors.New("hub: not allowed")

var (
	// DefaultPolicy lets any peer subscribe to any pattern and refuses
	// every rpc.publish: only the server's Go code publishes (Hub.Publish).
	// It is the policy of a Hub with none set.
	DefaultPolicy Policy = PolicyFunc(func(_ context.Context, a Action, _ string) error {
		if a == Subscribe {
			return nil
		}
		return ErrRefused
	})

	// AllowAll lets any peer subscribe and publish on any topic. It suits
	// demos, tests and trusted networks.
	AllowAll Policy = PolicyFunc(func(context.Context, Action, string) error { return nil })
)

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
