// Package peer implements one end of a symmetric JSON-RPC 2.0 connection:
// a [Conn] both calls methods on the other side and serves methods to it,
// with many calls in flight in each direction, answered in any order and
// matched by id.
//
// A Conn runs over any message-oriented [Transport]: a WebSocket in
// production ([AcceptWebSocket] on a server, [WebSocket] over any
// *websocket.Conn), an in-memory pipe in tests and examples ([Pipe]).
// [Respond] serves a single HTTP POST body with the same rules and no
// connection.
//
// Over a WebSocket accepted with AcceptWebSocket, the replies to calls
// that arrive together leave together, in one system call: while the
// reader runs a call with the next one read already, it holds the reply
// back, and writes what it holds with the reply to the last call of the
// read (a slow call does not hold the others' replies for more than the
// watchdog's few milliseconds). docs/peer.md has the details and figures.
//
// On the calling side, over a WebSocket the client package dialed, the
// calls queued while one is written leave together too, a call that waits
// alone for its reply is woken by Go's network poller rather than by a
// hand-off from the reader (see wake.go), and a call made while no other
// is pending reads its own reply (see own.go).
//
// # Serving
//
// Methods are registered on a [Mux]. [Func] adapts a typed function; its
// parameter binds from params given by position or by name:
//
//	mux := peer.NewMux()
//	mux.Handle("add", peer.Func(func(ctx context.Context, p struct{ A, B float64 }) (float64, error) {
//		return p.A + p.B, nil
//	}))
//
// Calls run concurrently, so a slow handler delays no other call by more
// than a few milliseconds (quick handlers run on the connection's reader,
// and a watchdog moves the reading to another goroutine when one takes
// long). The [Mode] a method is registered with says otherwise: [Serial]
// calls run one at a time, in arrival order; [Inline] calls run on the
// connection's reader, for quick handlers whose order matters. A handler returns an [*Error] to choose the
// code sent back; a plain error becomes -32000, a context error -32002 or
// -32003, and a panic -32603 (logged; the connection keeps serving).
//
// # Calling
//
// [Conn.Call] sends a call and waits for its result; [Conn.Notify] sends a
// notification; [Conn.Batch] sends many calls and notifications in one
// message. When the caller's context ends first, Call tells the other side
// with rpc.cancel and returns at once. When the connection closes, every
// pending call fails with an error wrapping [ErrClosed]. [Conn.Forward]
// passes a call received on one connection on to the other side of
// another, as a hub does for methods its peers provide.
//
// # System methods
//
// Every Conn answers the reserved methods rpc.cancel (cancel a call in
// flight), rpc.progress (partial results, see [Progress] and
// [WithProgress]) and rpc.ping; a Mux answers rpc.discover with an OpenRPC
// document generated from its typed handlers. Applications cannot register
// names starting with "rpc.".
//
// # Flow control and limits
//
// [Options] bounds message size, batch size, nesting, calls in flight, the
// outbound queue and, optionally, the rate of requests, with safe
// defaults. A peer that calls faster than it is served is slowed down,
// not refused: when MaxInFlight calls run, or MaxQueue messages wait to be
// written, the reader stops reading until there is room, and TCP pushes
// back on the sender. Only a peer that reads nothing for WriteStall, or
// that leaves MaxQueue events unread ([Conn.Post]), is closed (1008).
// [Conn.Ping] checks that the other side still answers. docs/peer.md
// explains the model; the wire protocol, error codes and limits are
// described in docs/protocol.md.
package peer
