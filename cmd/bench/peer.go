package main

import (
	"context"
	"encoding/json"
	"flag"
	"net/http"

	"github.com/coder/websocket"

	"github.com/switchboard-rpc/switchboard/peer"
)

// peerCmd serves the peer package alone: every WebSocket connection is a
// peer.Conn whose router has only echo, with no hub, server, metrics or
// limits around it. Measured beside the floor with the seq, pipe, conns
// and batch scenarios, it tells the peer package's cost from the rest of
// the hub's.
func peerCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("peer", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8091", "listen on `host:port`")
	if err := fs.Parse(args); err != nil {
		return err
	}
	return listenAndServe(ctx, "peer", *addr, newBarePeer())
}

// newBarePeer returns the handler of peerCmd.
func newBarePeer() http.Handler {
	m := peer.NewMux()
	m.Handle("echo", peer.Func(func(_ context.Context, p json.RawMessage) (json.RawMessage, error) { return p, nil }))
	opts := &peer.Options{Router: m}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
		if err != nil {
			return
		}
		_ = peer.NewConn(peer.WebSocket(ws), opts).Serve(r.Context())
	})
}
