package membroker_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/hub/membroker"
	"github.com/switchboard-rpc/switchboard/peer"
)

type routerFunc func(string) (peer.Handler, peer.Mode)

func (f routerFunc) Lookup(m string) (peer.Handler, peer.Mode) { return f(m) }

// Two hubs of one sequenced cluster in one process: a peer of hub "b"
// subscribes, Go code publishes on hub "a", and the event reaches the peer
// at the same position as on "a"; Go code on "a" calls the peer on "b".
func Example() {
	c := membroker.New(&membroker.Options{Sequenced: true})
	hubs := map[string]*hub.Hub{}
	for _, name := range []string{"a", "b"} {
		b := c.Node(name)
		defer b.Close()
		hubs[name] = hub.New(&hub.Options{Broker: b.HubBroker()})
	}

	// A peer of hub b, over an in-memory pipe, as a server would join one.
	type event struct {
		Topic string
		Data  json.RawMessage
		Seq   uint64
		Epoch string
	}
	events := make(chan event, 1)
	mux := peer.NewMux()
	mux.Handle("hello", peer.Func(func(context.Context, struct{}) (string, error) { return "hello from b", nil }))
	client, srv := peer.NewPipeTransport()
	sc := peer.NewConn(srv, &peer.Options{Router: hubs["b"].Router(nil)})
	onEvent := peer.Func(func(_ context.Context, e event) (any, error) { events <- e; return nil, nil })
	cc := peer.NewConn(client, &peer.Options{Router: routerFunc(func(method string) (peer.Handler, peer.Mode) {
		if method == "rpc.event" {
			return onEvent, peer.Inline
		}
		return mux.Lookup(method)
	})})
	p := hubs["b"].Join(sc, "", nil)
	go sc.Serve(context.Background()) //nolint:errcheck
	go cc.Serve(context.Background()) //nolint:errcheck
	defer func() { cc.Close(); <-sc.Done(); <-cc.Done(); hubs["b"].Leave(p) }()

	ctx := context.Background()
	if err := cc.Call(ctx, "rpc.subscribe", []string{"chat.*"}, nil); err != nil {
		fmt.Println(err)
		return
	}
	n, err := hubs["a"].Publish(ctx, "chat.room1", "hi")
	fmt.Println("reached on a:", n, err)
	e := <-events
	fmt.Println("b got", e.Topic, string(e.Data), "at", e.Seq, "as on a:", e.Seq == hubs["a"].Position().Seq)

	var answer string
	err = hubs["a"].CallPeer(ctx, p.ID(), "hello", nil, &answer)
	fmt.Println(answer, err)
	// Output:
	// reached on a: 0 <nil>
	// b got chat.room1 "hi" at 1 as on a: true
	// hello from b <nil>
}
