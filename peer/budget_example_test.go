package peer_test

import (
	"context"
	"fmt"

	"github.com/switchboard-rpc/switchboard/peer"
)

// One message queued on two connections: the bytes are held once, and
// counted once against the budget the connections share.
func ExampleShared() {
	got := make(chan string, 2)
	mux := peer.NewMux()
	mux.Handle("news", peer.Func(func(_ context.Context, p []string) (any, error) {
		got <- p[0]
		return nil, nil
	}))
	budget := peer.NewBudget(64 << 20)
	a1, b1 := peer.Pipe(&peer.Options{QueueBudget: budget}, &peer.Options{Router: mux})
	defer a1.Close()
	defer b1.Close()
	a2, b2 := peer.Pipe(&peer.Options{QueueBudget: budget}, &peer.Options{Router: mux})
	defer a2.Close()
	defer b2.Close()

	msg := peer.NewShared([]byte(`{"jsonrpc":"2.0","method":"news","params":["hello"]}`))
	for _, c := range []*peer.Conn{a1, a2} {
		if err := c.PostShared(msg); err != nil {
			fmt.Println(err)
		}
	}
	fmt.Println(<-got, <-got)
	// Output: hello hello
}
