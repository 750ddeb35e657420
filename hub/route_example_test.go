package hub_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/peer"
)

// join connects a peer serving router to h over an in-memory pipe, as a
// server does over a WebSocket, and returns the peer's end and a function
// that disconnects it.
func join(h *hub.Hub, router peer.Router) (*peer.Conn, func()) {
	client, server := peer.NewPipeTransport()
	sc := peer.NewConn(server, &peer.Options{Router: h.Router(nil)})
	cc := peer.NewConn(client, &peer.Options{Router: router})
	p := h.Join(sc, "", nil)
	go sc.Serve(context.Background()) //nolint:errcheck
	go cc.Serve(context.Background()) //nolint:errcheck
	return cc, func() { cc.Close(); <-sc.Done(); <-cc.Done(); h.Leave(p) }
}

// A service provides text.* to the other peers; a browser calls
// text.upper on the hub, which forwards the call to the service.
func ExampleHub_Router_forwarding() {
	h := hub.New(&hub.Options{Policy: hub.AllowAll})
	ctx := context.Background()

	methods := peer.NewMux()
	methods.Handle("text.upper", peer.Func(func(_ context.Context, s []string) (string, error) {
		return strings.ToUpper(strings.Join(s, " ")), nil
	}))
	service, leave := join(h, methods)
	defer leave()
	var provided struct{ Methods []string }
	if err := service.Call(ctx, "rpc.provide", []string{"text.*"}, &provided); err != nil {
		fmt.Println(err)
		return
	}

	browser, leave2 := join(h, nil)
	defer leave2()
	var upper string
	err := browser.Call(ctx, "text.upper", []string{"hello", "hub"}, &upper)
	fmt.Println(provided.Methods, upper, err)
	err = browser.Call(ctx, "text.lower", []string{"HI"}, nil)
	fmt.Println(err)
	fmt.Println(h.Stats().Routes.Forwarded)
	// Output:
	// [text.*] HELLO HUB <nil>
	// jsonrpc error -32601: Method not found
	// map[text.lower:1 text.upper:1]
}
