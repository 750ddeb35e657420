// Package mcp serves the Model Context Protocol on a Switchboard hub, so
// that any MCP client (an agent's host, an IDE, the MCP inspector) lists
// and calls, as tools, the methods the hub serves and its peers provide
// (PROTOCOL.md section 10).
//
// The official Go SDK (github.com/modelcontextprotocol/go-sdk) speaks MCP:
// its Streamable HTTP transport with sessions, version negotiation and
// MCP's JSON-RPC. This package supplies what the SDK serves:
//
//   - tools: one per method that the session's identity may call and that
//     rpc.discover on the hub describes (never rpc.*), with an input schema
//     made of the method's named params; a provided method nobody
//     describes takes any object. The list follows the peers: a provider
//     that provides, withdraws or leaves, here or on another node, makes
//     every session get notifications/tools/list_changed within 2 s (the
//     hub tells of each change: [hub.Hub.WatchProvided]); so does a token
//     with other grants, and [Handler.ToolsChanged] after new rules.
//   - tools/call runs the method as an HTTP POST caller's call would run
//     ([server.Server.Respond]): the hub's own, or forwarded to a provider,
//     here or on another node. rpc.progress from the provider becomes
//     notifications/progress, notifications/cancelled becomes rpc.cancel,
//     and a session that ends cancels its calls.
//   - resources: topics, as switchboard://topic/{topic}; reading one gives
//     its history, subscribing to one sends notifications/resources/updated
//     for each new event.
//
// Mount it on a [server.Server], which authenticates and checks each
// request as it does /rpc's:
//
//	srv := server.New(opts)
//	m := mcp.New(srv, nil)
//	srv.Handle("/mcp", m)
//	...
//	m.Shutdown(ctx) // with srv.Shutdown: ends the sessions
//
// A session ends when the token of its latest request expires, as a
// WebSocket closes with 4001, and a subscription its latest token no
// longer allows sends nothing more.
//
// An MCP session is not a peer: it is in no presence list and cannot be
// addressed.
package mcp
