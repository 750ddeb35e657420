package hub_test

import (
	"fmt"
	"testing"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/peer"
)

// BenchmarkListPeers lists 10,000 peers (of 100 users, every tenth
// subscribed to a topic), whose connections go nowhere: the hub's cost of
// admin.peers, not the network's. One op lists them all, in pages of
// 1,000 ("pages"), or pages through one user's 100 ("user").
func BenchmarkListPeers(b *testing.B) {
	h := hub.New(nil)
	for i := range 10_000 {
		c := peer.NewConn(&discard{closed: make(chan struct{})}, nil)
		p := h.Join(c, "", fmt.Sprintf("user-%d", i%100))
		p.SetRemote("192.0.2.1:54321")
		if i%10 == 0 {
			if err := p.Subscribe(fmt.Sprintf("room.%d", i/10%10)); err != nil {
				b.Fatal(err)
			}
		}
		b.Cleanup(func() { c.Close(); h.Leave(p) })
	}
	for _, q := range []struct {
		name string
		q    hub.PeerQuery
		want int
	}{
		{"pages", hub.PeerQuery{Limit: 1000}, 10_000},
		{"user", hub.PeerQuery{User: "user-7", Limit: 1000}, 100},
		{"topic", hub.PeerQuery{Topic: "room.3", Limit: 1000}, 100},
	} {
		b.Run(q.name, func(b *testing.B) {
			for b.Loop() {
				n := 0
				query := q.q
				for {
					page, err := h.ListPeers(b.Context(), query)
					if err != nil {
						b.Fatal(err)
					}
					n += len(page.Peers)
					if page.Next == "" {
						break
					}
					query.After = page.Next
				}
				if n != q.want {
					b.Fatalf("listed %d, want %d", n, q.want)
				}
			}
		})
	}
}
