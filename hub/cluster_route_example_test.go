package hub_test

import (
	"context"
	"fmt"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/peer"
)

// Go code calls a method on a peer by its id. In a cluster (a Broker that
// is a hub.Directory, such as hub/natsbroker's), the peer may be connected
// to any node, and ClusterPeers lists the peers of every node.
func ExampleHub_CallPeer() {
	h := hub.New(nil)
	ctx := context.Background()

	methods := peer.NewMux()
	methods.Handle("greet", peer.Func(func(_ context.Context, p struct{ Name string }) (string, error) {
		return "hello, " + p.Name, nil
	}))
	_, leave := join(h, methods)
	defer leave()

	peers, err := h.ClusterPeers(ctx)
	if err != nil || len(peers) != 1 {
		fmt.Println(peers, err)
		return
	}
	var greeting string
	err = h.CallPeer(ctx, peers[0].ID, "greet", map[string]string{"name": "hub"}, &greeting)
	fmt.Println(greeting, err)
	err = h.CallPeer(ctx, "no-such-peer", "greet", nil, nil)
	fmt.Println(err)
	// Output:
	// hello, hub <nil>
	// jsonrpc error -32007: No such peer: no-such-peer
}
