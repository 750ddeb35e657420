package natsbroker_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/hub/natsbroker"
	"github.com/switchboard-rpc/switchboard/peer"
)

// Two hubs of a cluster over a NATS server with JetStream: a peer of hub
// "b" subscribes, Go code publishes on hub "a", and the event reaches the
// peer with the stream's position.
func Example() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true, StoreDir: dir, NoSigs: true, NoLog: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	ns.Start()
	defer func() { ns.Shutdown(); ns.WaitForShutdown() }()
	ns.ReadyForConnections(5 * time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hubs := map[string]*hub.Hub{}
	for _, name := range []string{"a", "b"} {
		b, err := natsbroker.Connect(ctx, &natsbroker.Options{URLs: ns.ClientURL(), Node: name, JetStream: true})
		if err != nil {
			fmt.Println(err)
			return
		}
		defer b.Close()
		h := hub.New(&hub.Options{Broker: b.HubBroker()})
		if err := b.Start(ctx); err != nil {
			fmt.Println(err)
			return
		}
		hubs[name] = h
	}

	// A peer of hub b, over an in-memory pipe, as a server would join one.
	events := make(chan event, 1)
	client, srv := peer.NewPipeTransport()
	sc := peer.NewConn(srv, &peer.Options{Router: hubs["b"].Router(nil)})
	cc := peer.NewConn(client, &peer.Options{Router: routerFunc(func(method string) (peer.Handler, peer.Mode) {
		return peer.Func(func(_ context.Context, e event) (any, error) { events <- e; return nil, nil }), peer.Inline
	})})
	p := hubs["b"].Join(sc, "", nil)
	go sc.Serve(context.Background()) //nolint:errcheck
	go cc.Serve(context.Background()) //nolint:errcheck
	defer func() { cc.Close(); <-sc.Done(); <-cc.Done(); hubs["b"].Leave(p) }()
	if err := cc.Call(ctx, "rpc.subscribe", []string{"chat.*"}, nil); err != nil {
		fmt.Println(err)
		return
	}

	n, err := hubs["a"].Publish(ctx, "chat.room1", "hello from a")
	fmt.Println("reached on a:", n, err)
	e := <-events
	fmt.Println("b got", e.Topic, string(e.Data), "at", e.Seq, e.Epoch == hubs["a"].Position().Epoch)
	// Output:
	// reached on a: 0 <nil>
	// b got chat.room1 "hello from a" at 1 true
}
