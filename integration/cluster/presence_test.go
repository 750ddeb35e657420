package cluster_test

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/client"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

// TestPresenceAcrossNodes: rpc.presence on one node lists the peers of
// every node, each with its node; a watcher on n1 hears of a peer of n3
// joining and leaving its topic.
func TestPresenceAcrossNodes(t *testing.T) {
	ns := startNATS(t)
	hubs := startNodes(t, ns, 3)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	watcher := dial(t, hubs[0])
	changes := make(chan client.PresenceChange, 10)
	if _, err := watcher.SubscribeWith(ctx, "room.1", &client.SubscribeOptions{
		OnPresence: func(pc client.PresenceChange) { changes <- pc },
	}, func(client.Event) {}); err != nil {
		t.Fatal(err)
	}
	onN2 := dial(t, hubs[1])
	if _, err := onN2.Subscribe(ctx, "room.>", func(client.Event) {}); err != nil {
		t.Fatal(err)
	}
	if pc := testkit.RecvSlow(t, changes, "a presence change"); !pc.Join || pc.Peer.Node != "n2" || pc.Topic != "room.1" {
		t.Fatalf("got %+v, want n2's peer joining room.1", pc)
	}
	onN3 := dial(t, hubs[2])
	sub, err := onN3.Subscribe(ctx, "room.*", func(client.Event) {})
	if err != nil {
		t.Fatal(err)
	}
	joined := testkit.RecvSlow(t, changes, "a presence change")
	if !joined.Join || joined.Peer.Node != "n3" || joined.Peer.ID == "" {
		t.Fatalf("got %+v, want n3's peer joining", joined)
	}

	peers, err := onN3.Presence(ctx, "room.1")
	if err != nil {
		t.Fatal(err)
	}
	var nodes []string
	for _, p := range peers {
		nodes = append(nodes, p.Node)
	}
	sort.Strings(nodes)
	if len(nodes) != 3 || nodes[0] != "n1" || nodes[1] != "n2" || nodes[2] != "n3" {
		t.Fatalf("presence of room.1 asked on n3: %+v, want a peer on each node", peers)
	}
	if peers, err := watcher.Presence(ctx, "room.2"); err != nil || len(peers) != 2 {
		t.Fatalf("presence of room.2: %+v, %v; want the peers of n2 and n3", peers, err)
	}

	if err := sub.Unsubscribe(ctx); err != nil {
		t.Fatal(err)
	}
	if left := testkit.RecvSlow(t, changes, "a presence change"); left.Join || left.Peer != joined.Peer {
		t.Fatalf("got %+v, want %+v leaving", left, joined.Peer)
	}
	// A peer that disconnects leaves too.
	_ = onN2.Close()
	if left := testkit.RecvSlow(t, changes, "a presence change"); left.Join || left.Peer.Node != "n2" {
		t.Fatalf("got %+v, want n2's peer leaving", left)
	}
}
