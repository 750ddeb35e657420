// Package server serves Switchboard over HTTP: JSON-RPC 2.0 on /rpc, over
// a WebSocket or as an HTTP POST, plus /healthz and /readyz.
//
// A [Server] is an http.Handler. Each WebSocket becomes a [peer.Conn]
// and joins the server's [hub.Hub], so both sides can call each other and
// the peer can subscribe to topics. The connection is served on a
// goroutine of its own, with the request context's values but not its
// cancellation: ServeHTTP returns once the connection is upgraded, and
// Server.Shutdown, not http.Server.Shutdown, closes it.
// An HTTP POST body is answered in the response, with no connection:
//
//	mux := peer.NewMux()
//	mux.Handle("add", peer.Func(add))
//	srv := server.New(&server.Options{
//		Router: mux,
//		Hub:    hub.New(&hub.Options{Policy: hub.AllowAll}),
//		Logger: logger,
//	})
//	hs := &http.Server{Addr: "127.0.0.1:8080", Handler: srv}
//	go hs.ListenAndServe()
//	...
//	srv.Shutdown(ctx) // WebSockets: finish calls in flight, close with 1001
//	hs.Shutdown(ctx)  // the listener and plain HTTP requests
//
// # HTTP
//
// POST /rpc takes Content-Type application/json and answers 200 with the
// reply (JSON-RPC errors included), or 204 when there is nothing to answer
// (notifications only). A wrong method gets 405, a wrong content type 415,
// a body over [Options].Conn.MaxMessage 413, a body still arriving after
// [Options].BodyTimeout 408, and GET without an Upgrade 426.
// Over POST there is no peer: methods that need one, such as rpc.subscribe,
// answer with an error at once.
//
// # Security
//
// Browsers may open a WebSocket or POST only from the server's own origin
// unless [Options].AllowedOrigins says otherwise. On a loopback listener
// the Host header must name this machine (localhost or an IP address), which
// defeats DNS rebinding. [Options].Authenticate runs before the upgrade and
// before a POST body is read; a refusal is 401 (or 403), and the identity
// it returns reaches handlers and the hub's policy through [hub.Identity].
// [Options].Authorize refuses single methods with -32001. [BearerToken]
// reads a token from a header, a WebSocket subprotocol ([Subprotocol]) or
// the query string; [TokenAuth] checks it in constant time. A [JWT]
// verifies JSON Web Tokens (docs/security.md, "Identity and rules"): its Authenticate gives
// a *rules.Identity whose grants and claims the hub/rules policy reads;
// with [Options].Reauthenticate, rpc.auth replaces a live connection's
// token, and a connection whose token expires is closed with 4001. A [Listener]
// caps connections in total and per address, and serves TLS.
//
// # Audit
//
// Every refusal is logged once by an [Audit] ([Options].Audit, or one of
// the server's own on [Options].Logger), with who (identity, peer,
// address), what (action and target) and why: authentication at Info,
// the rules and the limits at Debug, each kind rate-limited by a token
// bucket. Give the same Audit's [Audit.HubRefused] to the hub's
// OnRefused option to have the hub's refusals in the trail too. At Debug
// each POST also has an access log line.
//
// # Limits
//
// One message or body is at most 1 MiB by default (after decompression, if
// [Options].Compression is on); a larger WebSocket message closes the
// connection with 1009. A peer that calls faster than it is served is
// slowed down, not refused: the server stops reading from it until there
// is room. A peer that does not read its events fast enough is closed with
// 1008 once [Options].Conn.MaxQueue of them wait, and one that reads nothing
// for [Options].Conn.WriteStall too. The server pings every WebSocket peer and
// closes one that stops answering within PingInterval + PingTimeout
// (a minute by default). While it shuts down, new calls get -32005.
//
// # Metrics
//
// [Server.Stats] counts connections, refused requests and the hub's
// events; [Options].OnServe observes each request served. The server
// imports no metrics library: the server/prom package exports both to
// Prometheus. docs/server.md lists the metrics.
package server
