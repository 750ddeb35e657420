package hub_test

import (
	"context"
	"fmt"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/peer"
)

// An operator's view of a hub: list a user's peers with what they are
// subscribed to, then disconnect them with a close code of one's own and
// refuse that user's older tokens.
func ExampleHub_ListPeers() {
	h := hub.New(nil)
	client, server := peer.NewPipeTransport()
	sc := peer.NewConn(server, &peer.Options{Router: h.Router(nil)})
	cc := peer.NewConn(client, nil)
	p := h.Join(sc, "peer-1", "alice")
	p.SetRemote("192.0.2.7:50123")
	go sc.Serve(context.Background()) //nolint:errcheck
	go cc.Serve(context.Background()) //nolint:errcheck
	defer func() { cc.Close(); <-sc.Done(); <-cc.Done(); h.Leave(p) }()
	_ = p.Subscribe("chat.room1")

	ctx := context.Background()
	page, err := h.ListPeers(ctx, hub.PeerQuery{User: "alice"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, d := range page.Peers {
		fmt.Println(d.ID, d.User, d.Remote, d.Topics)
	}

	gone, err := h.Disconnect(ctx, hub.Disconnect{User: "alice", Reason: "account closed", Revoke: true})
	fmt.Println(len(gone), err)
	<-cc.Done()
	fmt.Println(cc.Err())
	_, revoked := h.RevokedBefore("alice")
	fmt.Println(revoked)
	// Output:
	// peer-1 alice 192.0.2.7:50123 [chat.room1]
	// 1 <nil>
	// peer: connection closed: closed with code 4003: account closed
	// true
}
