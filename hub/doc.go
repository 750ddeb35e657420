// Package hub keeps the peers connected to a Switchboard server and the
// topics they subscribe to, and fans published messages out to them.
//
// A [Hub] starts no goroutines but one per peer while events are replayed
// to it (see Streams). The server tells it when a connection
// joins ([Hub.Join]) and leaves ([Hub.Leave]); in between the hub answers
// that connection's topic methods through the [peer.Router] that
// [Hub.Router] wraps around the application's own, and the server's Go
// code can list the peers, look one up and call methods on it:
//
//	h := hub.New(&hub.Options{Policy: hub.AllowAll})
//	srv := server.New(&server.Options{Router: mux, Hub: h})
//	...
//	for _, p := range h.Peers() {
//		var answer string
//		err := p.Conn().Call(ctx, "ask", map[string]string{"question": "ready?"}, &answer)
//		...
//	}
//	n, err := h.Publish(ctx, "prices.SWB", quote) // n peers reached
//
// # Topics
//
// Topics are dot-separated words of letters, digits, '_', '-' and ':', such
// as "chat.room1". A subscription pattern may use "*" for any one word and,
// as its last word, ">" for one or more words: "chat.*" matches
// "chat.room1", "chat.>" matches "chat.room1" and "chat.room1.thread".
// Peers use the system methods of the wire protocol:
//
//	rpc.subscribe    {"topic": "chat.*"} or ["chat.*", "news"]  -> {"topics": [...]}
//	rpc.unsubscribe  the same                                   -> {"topics": [those removed]}
//	rpc.publish      {"topic": "chat.room1", "data": ...} or [topic, data] -> {"delivered": n, "seq": s, "epoch": e}
//	rpc.event        hub -> peer: {"topic": "chat.room1", "data": ..., "seq": s, "epoch": e}
//	rpc.history      {"topic": "chat.>", "limit": n}               -> {"epoch": e, "seq": s, "events": [...]}
//	rpc.presence     {"topic": "chat.room1"}                       -> {"peers": [{"id": ..., "user": ...}]}
//
// A peer subscribed through several matching patterns gets each event once.
// A bad topic or pattern is answered with -32602.
//
// # Delivery
//
// A published message is encoded once, and the same bytes are queued on
// every subscriber's connection with [peer.Conn.PostShared], which never
// waits, and counts once against the queue budget the connections share.
// Events reach every subscriber in the order they were published (the hub
// hands each event to all subscribers before taking the next), and a
// peer's own topic requests take effect in the order it sent them.
//
// A subscriber that lets the connection's MaxQueue events pile up unread
// is closed with WebSocket close code 1008 ("too slow"): it neither slows
// the publisher nor the other subscribers. [Hub.Stats] counts such closes
// and the events they cost.
//
// # Methods served by peers
//
// A peer may serve methods to all the others: it sends rpc.provide with
// names or patterns, written like topic patterns ("billing.*"), and the
// router of [Hub.Router] forwards each call of such a method that the
// application does not serve itself to a peer that provides it, the least
// busy when there are several, never back to the caller:
//
//	rpc.provide    {"methods": ["billing.*"]} or ["billing.*"]  -> {"methods": [...]}
//	rpc.unprovide  the same                                      -> {"methods": [those removed]}
//
// The caller gets the provider's answer unchanged under its own id;
// rpc.cancel and rpc.progress pass through ([peer.Conn.Forward] does the
// work). The hub answers itself only when there is no provider (-32601),
// the provider disconnected (-32006), Options.ForwardTimeout passed
// (-32003), every provider has Options.MaxForwards calls waiting (-32004),
// or it is shutting down (-32005). rpc.discover lists the provided methods
// as their providers describe them. [Hub.Stats] counts the forwarded calls.
//
// # Calls of chosen peers
//
// rpc.call lets the caller choose the peer: by its id (rpc.whoami tells a
// peer its own), or every peer of a user or of a topic, on this node or,
// with a [Directory], any other; callers over HTTP POST too. It takes
// the path of forwarded calls, with the same answers of the hub's own,
// and -32007 for a peer that is nowhere; a user or a topic is answered
// with one entry per peer. The Policy's [Address] action decides who may
// address whom, seeing "user.<identity>" and "peer.<id>" with the identity
// and the id escaped into one word ([UserWord]); [DefaultPolicy] lets no
// one. docs/routing.md describes it.
//
//	rpc.whoami  (none)                                              -> {"id": ..., "user": ..., "node": ..., "userWord": ...}
//	rpc.call    {"peer": id, "method": m, "params": p, "timeout": ms} -> the peer's answer
//	rpc.call    {"user": u} or {"topic": t}, with the same           -> {"results": [{"peer": {...}, "result" or "error"}, ...]}
//
// # Streams
//
// Every event gets a position in the hub's stream (seq, over all topics,
// and the stream's epoch), given under the lock fan-out holds and written
// into the one encoded message. A [Store] numbers the events and keeps
// recent ones: by default a [MemoryStore], bounded per topic by count, age
// and bytes and in all by bytes ([Options].History, [Retention]).
//
// rpc.subscribe with "since" resumes a subscription: the hub registers it
// at the current position, replays what the store holds after since up to
// there, on a goroutine that waits for room in the peer's queue, then
// delivers the live events it held back meanwhile. Each subscription sees
// its events once, in increasing position order; "recovered" says whether
// nothing was missing. Replayed events carry "replay": the pattern they
// are for, so that a client with overlapping subscriptions can tell whose
// they are. rpc.presence lists the peers an event would reach, and a
// subscription with "presence": true gets rpc.join and rpc.leave as others
// come and go. [Hub.Stats] counts the history and the recoveries.
// docs/streams.md explains all of it.
//
// # Clusters
//
// Several hubs act as one through a [Broker] (Options.Broker; the package
// hub/natsbroker links hubs over NATS). [New] hands the broker a
// [BrokerHandle], its way into the hub. Each event published on a hub is
// delivered to its own subscribers, then handed to the broker, which sends
// it to the others; they deliver it with [BrokerHandle.Deliver], as if
// published there but not sent on. A broker that is also a [Sequencer]
// numbers the events itself (a NATS JetStream stream): then every hub
// delivers what the Sequencer hands back through
// [BrokerHandle.DeliverAt], with the stream's positions and epoch, the
// same on every node. [BrokerHandle.Interrupted] tells a hub that events
// of other nodes may be lost, so that a resume from before it is not told
// it recovered everything. Without a Broker, none of this costs anything.
// docs/cluster.md describes the guarantees.
//
// A broker that is also a [Directory] makes the peers of every node
// addressable: a call of a method that no peer of this hub provides goes
// to a provider on another node (a local one is preferred), rpc.presence
// and rpc.join/rpc.leave cover every node, and [Hub.ClusterPeers] and
// [Hub.CallPeer] reach the peers of the whole cluster from Go. The hub
// serves the other nodes' requests through the handle
// ([BrokerHandle.ServeRemoteCall], [BrokerHandle.LocalPeers]).
// docs/routing.md describes it.
//
// # Authorization
//
// A [Policy] decides who may subscribe to a pattern (and read its
// history), publish on a topic, see presence, provide a method and call a
// provided one; it sees the request's context, and so the caller's
// [Identity]. A refusal is answered with -32001, and reported to
// Options.OnRefused (a [Refusal]: the peer, the action, the target), where
// an audit log hooks. The default,
// [DefaultPolicy], lets peers subscribe and call provided methods, and
// lets only Go code publish, no peer provide and no peer see presence;
// [AllowAll] suits demos and tests. [Hub.Publish] and [Peer.Subscribe], called by the server's own
// code, are not subject to the policy.
//
// The wire protocol is described in docs/protocol.md, routing in
// docs/routing.md.
package hub

// The files of the package, one concern each:
//
//	hub.go            the Hub, its Options and its peers joining and leaving
//	router.go         the life of a call: which handler serves a method; the Policy asked
//	builtin.go        the table of built-in rpc.* methods
//	params.go         reading params, by name or by position
//	topic.go          topic syntax and the trie of subscriptions
//	pattern.go        patterns as strings, for the history and presence
//	publish.go        rpc.publish, Hub.Publish, and fan-out to subscribers
//	subscribe.go      rpc.subscribe and rpc.unsubscribe
//	stream.go         the life of an event, and how a resume meets live events
//	replay.go         replaying history to a subscription that resumes
//	history*.go       the in-memory store and rpc.history
//	presence.go       rpc.presence, and the rpc.join and rpc.leave it sends
//	provide.go        rpc.provide and rpc.unprovide
//	route.go          forwarding a call to a provider, here or on another node
//	cluster_route.go  the hub's side of a Directory: the peers of every node, calls from them
//	address.go        rpc.whoami and rpc.call: calls to a chosen peer
//	discover.go       rpc.discover
//	broker.go         the broker seam: Broker, Sequencer, Directory, Describer, BrokerHandle
//	sequenced.go      the hub's side of a Sequencer: publishing through it
//	policy.go         Policy, its Actions, and the Identity in a context
