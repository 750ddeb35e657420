// Package client is the Go client of a Switchboard hub: a long-lived
// WebSocket connection that calls the hub's methods, serves methods the
// hub calls back, subscribes to topics, and repairs itself when the
// connection drops. [HTTPClient] makes one-shot calls over HTTP POST.
//
//	c, err := client.Dial(ctx, "ws://127.0.0.1:8080/rpc", &client.Options{
//		Token:  os.Getenv("HUB_TOKEN"),
//		Router: mux, // the methods the hub may call on us
//	})
//	if err != nil { ... }
//	defer c.Close()
//
//	var sum float64
//	err = c.Call(ctx, "add", []float64{1, 2}, &sum)
//
//	sub, err := c.Subscribe(ctx, "news.>", func(ev client.Event) {
//		fmt.Println(ev.Topic, string(ev.Data))
//	})
//
// # Errors
//
// A call the hub answered with an error returns a *peer.Error; compare its
// Code. A call in flight when the connection drops returns an error
// wrapping [ErrConnectionLost] (it may or may not have run); a call made
// while the client is reconnecting waits for the connection, or fails at
// once with [ErrDisconnected] when Options.FailFast or [WithFailFast] say
// so. After Close every method returns an error wrapping [ErrClosed].
//
// # Reconnection
//
// When the connection drops, the client dials again after a pause that
// starts at Options.MinBackoff and doubles up to Options.MaxBackoff, with
// jitter, until it succeeds or Options.MaxAttempts attempts have failed.
// A server that refused the handshake with a Retry-After (a hub at its
// connection limit answers 503 with "Retry-After: 1") is not dialed again
// before that time has passed ([StatusError].RetryAfter).
// On success it subscribes again to the patterns of its subscriptions
// before any waiting call goes through, and keeps serving its Router.
// Options.OnState sees every change of [State].
//
// Options.URLs names the other nodes of a cluster of hubs: Dial tries
// them after its url, and each reconnection attempt goes to the URL after
// the last one tried, so that a client whose node died moves to another.
// Subscriptions resume there from their positions: without loss when the
// nodes share one event stream (one epoch), and with a Missed event when
// each node has its own.
//
// # Providing methods
//
// A client can serve methods to every other peer of the hub, browsers
// and services alike: [Client.Provide] registers a handler for a name or
// a pattern ("billing.*") and tells the hub, which then forwards the
// calls of those methods to this client and passes the answers back,
// with cancellation and progress:
//
//	p, err := c.Provide(ctx, "billing.charge", peer.Func(charge))
//	...
//	defer p.Close() // withdraws it
//
// After a reconnection the client provides its methods again. The hub
// decides who may provide what (its Policy); see docs/routing.md.
//
// # Calling other peers
//
// [Client.CallPeer] calls a method on one peer of the hub, chosen by its
// id (which [Client.WhoAmI] tells each peer), wherever it is connected;
// [Client.CallPeers] calls every peer of a user or of a topic and returns
// one [PeerResult] each. [HTTPClient] has both, over POST. The hub
// decides who may address whom.
//
// # Events
//
// The hub sends events as rpc.event notifications. The client queues each
// one to every subscription whose pattern matches its topic; each
// subscription runs its handler on a goroutine of its own, one event at a
// time, in the order of their positions in the hub's stream ([Event.Seq]).
//
// # Resuming
//
// Each subscription remembers the position of the last event it took
// ([Subscription.Position]). After a reconnection it subscribes again from
// there, and the hub replays what was published meanwhile: the handler
// sees every event once and in order, as if the connection had never
// dropped. When the hub no longer holds all of it (its history is bounded,
// and a restarted hub has a new epoch and none), the handler first gets an
// [Event] with Missed set, then what the hub still has: the application
// should reload whatever state it built from the events. A handler that
// falls [Options].EventBuffer events behind gets the same signal.
// [SubscribeOptions].Since resumes from a saved position in a new client.
//
// [Client.History] reads the recent events of a pattern, and
// [Client.Presence] and [SubscribeOptions].OnPresence tell who is
// subscribed.
//
// The wire protocol is described in docs/protocol.md.
package client
