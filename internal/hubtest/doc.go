// Package hubtest runs the real hub for tests: [server.New] with a fresh
// [hub.Hub] that allows everything and the methods of [demo.Mux], on a
// port of 127.0.0.1. A test can stop it as its process would stop on
// SIGTERM and start it again on the same address, under connected
// clients, to see what they do when the hub restarts.
//
//	h := hubtest.Start(t, nil)
//	c, err := client.Dial(ctx, h.WS(), nil)
//	...
//	h.Stop()  // every WebSocket is closed with 1001
//	h.Start() // same address; the new hub knows no one
//
// [DialWS], [ServePeer], [WriteText], [ReadText] and [DialTCP] talk to any
// server of the hub on 127.0.0.1, a Hub or one a test builds itself: a raw
// WebSocket for the exact bytes, a served peer.Conn, a raw TCP connection;
// [WantCode] checks the JSON-RPC error a call returned. [StartNATS] runs a
// NATS server for the cluster's tests, [DeadAddr] and [DeadURL] name a
// port where nothing listens.
//
// It is test support only: nothing outside _test.go files imports it.
package hubtest
