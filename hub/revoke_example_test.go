package hub_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/peer"
)

// What authorizes a peer narrows on a live connection: Reauthorize ends
// the subscriptions the policy no longer allows and tells the peer with
// rpc.revoked.
func ExamplePeer_Reauthorize() {
	var news atomic.Bool
	news.Store(true)
	h := hub.New(&hub.Options{Policy: func(_ context.Context, _ hub.Action, topic string) error {
		if strings.HasPrefix(topic, "news.") && !news.Load() {
			return errors.New("no news")
		}
		return nil
	}})
	r := &revokeRouter{revoked: make(chan hub.Revoked, 1)}
	client, server := peer.NewPipeTransport()
	sc := peer.NewConn(server, &peer.Options{Router: h.Router(nil)})
	cc := peer.NewConn(client, &peer.Options{Router: r})
	p := h.Join(sc, "", "alice")
	go sc.Serve(context.Background()) //nolint:errcheck
	go cc.Serve(context.Background()) //nolint:errcheck
	defer func() { cc.Close(); <-sc.Done(); <-cc.Done(); h.Leave(p) }()

	ctx := context.Background()
	if err := cc.Call(ctx, "rpc.subscribe", []string{"news.*", "chat.room1"}, nil); err != nil {
		fmt.Println(err)
		return
	}
	news.Store(false)
	revoked, err := p.Reauthorize(hub.WithIdentity(ctx, p.Identity()))
	fmt.Println(revoked.Topics, err)
	fmt.Println("told:", (<-r.revoked).Topics)
	fmt.Println("left:", p.Topics())
	// Output:
	// [news.*] <nil>
	// told: [news.*]
	// left: [chat.room1]
}
