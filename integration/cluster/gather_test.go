package cluster_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/client"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
)

// TestGatheredAnswerAcrossNodes: a caller on n1 calls a topic whose 20
// peers are on n2 and answer 100 KB each, 2 MB in all: the answer is one
// message the client reads (within 1 MiB), with as many whole results as
// fit, Truncated and Asked.
func TestGatheredAnswerAcrossNodes(t *testing.T) {
	const peers = 20
	ns := startNATS(t)
	hubs := startNodes(t, ns, 2)
	big := strings.Repeat("x", 100_000)
	for range peers {
		mux := peer.NewMux()
		mux.HandleFunc("big", func(context.Context, *peer.Request) (any, error) { return big, nil })
		c, _ := dialAs(t, hubs[1], "", mux)
		subscribe(t, c, "room.big", client.Position{}, 1)
	}
	caller, _ := dialAs(t, hubs[0], "", nil)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	testkit.WaitFor(t, "n1 to see n2's peers on room.big", func() bool {
		present, err := caller.Presence(ctx, "room.big")
		return err == nil && len(present) == peers
	})
	all, err := caller.CallPeers(ctx, client.Address{Topic: "room.big"}, "big", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !all.Truncated || all.Asked != peers || len(all.Results) == 0 || len(all.Results) >= peers {
		t.Fatalf("truncated %v, asked %d, %d results", all.Truncated, all.Asked, len(all.Results))
	}
	for _, r := range all.Results {
		var s string
		if err := r.Decode(&s); err != nil || s != big || r.Peer.Node != nodeName(1) {
			t.Fatalf("entry from %+v: %d bytes, %v", r.Peer, len(s), err)
		}
	}
	t.Logf("%d of %d results of 100 KB", len(all.Results), peers)
}
