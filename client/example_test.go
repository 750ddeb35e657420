package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/switchboard-rpc/switchboard/client"
	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/peer"
	"github.com/switchboard-rpc/switchboard/server"
	"github.com/switchboard-rpc/switchboard/server/demo"
)

// demoHub starts a hub with the demo methods on a local port and returns
// its http:// URL and a function that stops it.
func demoHub() (string, func()) {
	srv := server.New(&server.Options{
		Router: demo.Mux(),
		Hub:    hub.New(&hub.Options{Policy: hub.AllowAll}),
	})
	ts := httptest.NewServer(srv)
	return ts.URL + "/rpc", func() {
		_ = srv.Shutdown(context.Background())
		ts.Close()
	}
}

// A client calls the hub, serves a method the hub calls back, and
// subscribes to a topic.
func Example() {
	url, stop := demoHub()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// The methods the hub may call on this client.
	mux := peer.NewMux()
	mux.Handle("greet", peer.Func(func(_ context.Context, p struct{ Name string }) (string, error) {
		return "hello, " + p.Name, nil
	}))

	c, err := client.Dial(ctx, strings.Replace(url, "http", "ws", 1), &client.Options{Router: mux})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	var sum float64
	if err := c.Call(ctx, "add", []float64{1, 2}, &sum); err != nil {
		log.Fatal(err)
	}
	fmt.Println("add:", sum)

	// The demo's callback makes the hub call greet on this client.
	var greeting string
	err = c.Call(ctx, "callback", map[string]any{"method": "greet", "params": []string{"gopher"}}, &greeting)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("callback:", greeting)

	events := make(chan client.Event, 1)
	sub, err := c.Subscribe(ctx, "news.>", func(ev client.Event) { events <- ev })
	if err != nil {
		log.Fatal(err)
	}
	defer sub.Close()
	if _, err := c.Publish(ctx, "news.go", "Go 1.26 is out"); err != nil {
		log.Fatal(err)
	}
	ev := <-events
	fmt.Println("event:", ev.Topic, string(ev.Data))

	// A JSON-RPC error comes back as a *peer.Error.
	err = c.Call(ctx, "no_such_method", nil, nil)
	var rpcErr *peer.Error
	if errors.As(err, &rpcErr) {
		fmt.Println("error:", rpcErr.Code, rpcErr.Message)
	}
	// Output:
	// add: 3
	// callback: hello, gopher
	// event: news.go "Go 1.26 is out"
	// error: -32601 Method not found
}

// An HTTPClient makes one-shot calls and batches over POST.
func ExampleNewHTTP() {
	url, stop := demoHub()
	defer stop()
	ctx := context.Background()

	hc := client.NewHTTP(url, nil)
	defer hc.Close()

	var diff float64
	var data []any
	batch := []peer.BatchElem{
		{Method: "subtract", Params: []float64{42, 23}, Result: &diff},
		{Method: "get_data", Result: &data},
		{Method: "notify_hello", Params: []int{7}, Notify: true},
	}
	if err := hc.Batch(ctx, batch); err != nil {
		log.Fatal(err)
	}
	fmt.Println(diff, data, batch[0].Err, batch[1].Err)
	// Output: 19 [hello 5] <nil> <nil>
}

// Calls made while the client is reconnecting wait for the connection by
// default; WithFailFast makes one fail at once instead.
func ExampleWithFailFast() {
	url, stop := demoHub()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	lost := make(chan struct{}, 1)
	c, err := client.Dial(ctx, strings.Replace(url, "http", "ws", 1), &client.Options{
		OnState: func(s client.State, err error) {
			if s == client.StateDisconnected {
				select {
				case lost <- struct{}{}:
				default:
				}
			}
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	stop() // the hub goes away
	<-lost
	err = c.Call(client.WithFailFast(ctx, true), "add", []int{1, 2}, nil)
	fmt.Println(err)
	// Output: client: not connected
}

// A service provides a method to the other peers of the hub; a second
// client, a browser say, calls it through the hub.
func ExampleClient_Provide() {
	url, stop := demoHub()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws := strings.Replace(url, "http", "ws", 1)

	service, err := client.Dial(ctx, ws, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer service.Close()
	type chargeParams struct {
		Account string `json:"account"`
		Cents   int    `json:"cents"`
	}
	_, err = service.Provide(ctx, "billing.charge", peer.Func(func(_ context.Context, p chargeParams) (string, error) {
		return fmt.Sprintf("charged %s %d cents", p.Account, p.Cents), nil
	}))
	if err != nil {
		log.Fatal(err)
	}

	browser, err := client.Dial(ctx, ws, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer browser.Close()
	var receipt string
	if err := browser.Call(ctx, "billing.charge", chargeParams{"ada", 1250}, &receipt); err != nil {
		log.Fatal(err)
	}
	fmt.Println(receipt)
	// Output: charged ada 1250 cents
}

// A subscription resumes from a saved position: the hub replays what was
// published after it, then the live events follow.
func ExampleClient_SubscribeWith() {
	url, stop := demoHub()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws := strings.Replace(url, "http", "ws", 1)

	first, err := client.Dial(ctx, ws, nil)
	if err != nil {
		log.Fatal(err)
	}
	seen := make(chan client.Event, 10)
	if _, err := first.Subscribe(ctx, "orders.*", func(ev client.Event) { seen <- ev }); err != nil {
		log.Fatal(err)
	}
	for _, id := range []string{"a1", "a2", "a3"} {
		if _, err := first.Publish(ctx, "orders.new", id); err != nil {
			log.Fatal(err)
		}
	}
	<-seen
	saved := (<-seen).Position() // processed up to a2; then the program stops
	first.Close()

	second, err := client.Dial(ctx, ws, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer second.Close()
	resumed := make(chan client.Event, 10)
	_, err = second.SubscribeWith(ctx, "orders.*", &client.SubscribeOptions{Since: saved}, func(ev client.Event) {
		resumed <- ev
	})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := second.Publish(ctx, "orders.new", "a4"); err != nil {
		log.Fatal(err)
	}
	for range 2 {
		ev := <-resumed
		fmt.Println(ev.Seq, ev.Topic, string(ev.Data), ev.Missed)
	}
	// Output:
	// 3 orders.new "a3" false
	// 4 orders.new "a4" false
}

// A client given the nodes of a cluster moves to another node when its
// own goes away.
func ExampleDial_cluster() {
	url1, stop1 := demoHub()
	url2, stop2 := demoHub()
	defer stop2()
	ws1, ws2 := strings.Replace(url1, "http", "ws", 1), strings.Replace(url2, "http", "ws", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	moved := make(chan struct{}, 1)
	connected := 0
	c, err := client.Dial(ctx, ws1, &client.Options{
		URLs: []string{ws2},
		OnState: func(s client.State, err error) {
			if s == client.StateConnected {
				if connected++; connected == 2 {
					moved <- struct{}{}
				}
			}
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	fmt.Println("on the first node:", c.URL() == ws1)

	stop1() // the first node goes away
	<-moved
	fmt.Println("on the second node:", c.URL() == ws2)
	var sum float64
	if err := c.Call(ctx, "add", []float64{1, 2}, &sum); err != nil {
		log.Fatal(err)
	}
	fmt.Println("add:", sum)
	// Output:
	// on the first node: true
	// on the second node: true
	// add: 3
}

// One client calls a method on another, chosen by its peer id; then a
// backend over HTTP POST asks every subscriber of a topic.
func ExampleClient_CallPeer() {
	url, stop := demoHub()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// alice's tab serves confirm.
	mux := peer.NewMux()
	mux.Handle("confirm", peer.Func(func(_ context.Context, p struct{ Amount int }) (string, error) {
		return fmt.Sprintf("confirmed %d", p.Amount), nil
	}))
	tab, err := client.Dial(ctx, strings.Replace(url, "http", "ws", 1), &client.Options{Router: mux})
	if err != nil {
		log.Fatal(err)
	}
	defer tab.Close()
	if _, err := tab.Subscribe(ctx, "room.7", func(client.Event) {}); err != nil {
		log.Fatal(err)
	}
	me, err := tab.WhoAmI(ctx)
	if err != nil {
		log.Fatal(err)
	}

	// A backend without a WebSocket of its own calls it by id.
	backend := client.NewHTTP(url, nil)
	defer backend.Close()
	var answer string
	if err := backend.CallPeer(ctx, me.ID, "confirm", map[string]int{"amount": 42}, &answer); err != nil {
		log.Fatal(err)
	}
	fmt.Println(answer)

	// Every peer on room.7: one result each, as many as fit in one
	// message of the hub's (Truncated says some did not).
	all, err := backend.CallPeers(ctx, client.Address{Topic: "room.7"}, "confirm", map[string]int{"amount": 7})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(all.Asked, all.Truncated)
	for _, r := range all.Results {
		var s string
		fmt.Println(r.Peer.ID == me.ID, r.Decode(&s), s)
	}

	err = backend.CallPeer(ctx, "no-such-peer", "confirm", nil, nil)
	fmt.Println(err)
	// Output:
	// confirmed 42
	// 1 false
	// true <nil> confirmed 7
	// jsonrpc error -32007: No such peer: no-such-peer
}
