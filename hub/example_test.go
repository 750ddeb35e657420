package hub_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/peer"
)

// A hub serving one peer over an in-memory pipe, as a server would over a
// WebSocket: the peer subscribes with a wildcard, Go code publishes.
func ExampleHub_Publish() {
	h := hub.New(nil)

	// The client end receives events as rpc.event notifications.
	events := make(chan event, 1)
	client, server := peer.NewPipeTransport()
	sc := peer.NewConn(server, &peer.Options{Router: h.Router(nil)})
	cc := peer.NewConn(client, &peer.Options{Router: eventRouter(events)})
	p := h.Join(sc, "", nil)
	go sc.Serve(context.Background()) //nolint:errcheck
	go cc.Serve(context.Background()) //nolint:errcheck
	defer func() { cc.Close(); <-sc.Done(); <-cc.Done(); h.Leave(p) }()

	ctx := context.Background()
	var res struct{ Topics []string }
	if err := cc.Call(ctx, "rpc.subscribe", []string{"prices.*"}, &res); err != nil {
		fmt.Println(err)
		return
	}
	n, err := h.Publish(ctx, "prices.SWB", map[string]float64{"last": 101.25})
	fmt.Println(res.Topics, n, err)
	e := <-events
	fmt.Println(e.Topic, string(e.Data))
	// Output:
	// [prices.*] 1 <nil>
	// prices.SWB {"last":101.25}
}

// A policy that lets everyone subscribe, and only admins publish, and
// nobody else touch the admin topics.
func ExamplePolicy() {
	policy := hub.Policy(func(ctx context.Context, a hub.Action, topic string) error {
		admin := hub.Identity(ctx) == "admin"
		switch {
		case admin:
			return nil
		case a == hub.Publish, topic == "admin" || strings.HasPrefix(topic, "admin."):
			return errors.New("admins only")
		}
		return nil
	})
	ctx := hub.WithIdentity(context.Background(), "alice")
	fmt.Println(policy(ctx, hub.Subscribe, "news"))
	fmt.Println(policy(ctx, hub.Subscribe, "admin.>"))
	fmt.Println(policy(ctx, hub.Publish, "news"))
	// Output:
	// <nil>
	// admins only
	// admins only
}

// The server's Go code calls a method the peer serves.
func ExamplePeer_Conn() {
	h := hub.New(nil)
	browser := peer.NewMux()
	browser.Handle("confirm", peer.Func(func(_ context.Context, p struct{ Question string }) (bool, error) {
		return strings.HasSuffix(p.Question, "?"), nil
	}))
	client, server := peer.NewPipeTransport()
	sc := peer.NewConn(server, &peer.Options{Router: h.Router(nil)})
	cc := peer.NewConn(client, &peer.Options{Router: browser})
	p := h.Join(sc, "browser-1", "alice")
	go sc.Serve(context.Background()) //nolint:errcheck
	go cc.Serve(context.Background()) //nolint:errcheck
	defer func() { cc.Close(); <-sc.Done(); <-cc.Done(); h.Leave(p) }()

	var ok bool
	err := h.Peer("browser-1").Conn().Call(context.Background(), "confirm", map[string]string{"question": "Deploy?"}, &ok)
	fmt.Println(p.Identity(), ok, err)
	// Output: alice true <nil>
}

// The history can be read from Go code, through the hub's Store.
func ExampleMemoryStore() {
	h := hub.New(&hub.Options{History: hub.History{
		Retention: hub.Retention{Events: 2}, // the last two events of each topic
	}})
	ctx := context.Background()
	for i := range 3 {
		if _, err := h.Publish(ctx, "prices.SWB", 100+i); err != nil {
			fmt.Println(err)
			return
		}
	}
	page, err := h.Store().Read(hub.Query{Pattern: "prices.*", Limit: 10})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range page.Events {
		fmt.Println(e.Seq, e.Topic, string(e.Data))
	}
	// The first event is gone: resuming from before it is incomplete.
	fmt.Println(page.Complete, page.Last, h.Stats().Stream.Evicted)
	// Output:
	// 2 prices.SWB 101
	// 3 prices.SWB 102
	// false 3 1
}
