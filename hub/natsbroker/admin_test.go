package natsbroker_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
)

// The admin API answers for both nodes from either: a listing pages
// through the peers of both in one order, and a kick by user closes the
// user's peers on the other node, which records the revocation too.
func TestAdminAcrossNodes(t *testing.T) {
	url := startNATS(t)
	a, b := startQuietNode(t, url, "a", 0), startQuietNode(t, url, "b", 0)
	testkit.WaitFor(t, "the nodes know each other", func() bool {
		return len(a.b.Members()) == 1 && len(b.b.Members()) == 1
	})
	var bobs []*peer.Conn
	for range 2 {
		attach(t, a, &peer.Options{}, "alice", nil)
	}
	for range 3 {
		c, _ := attach(t, b, &peer.Options{}, "bob", nil)
		bobs = append(bobs, c)
	}

	var ids []string
	nodes := map[string]int{}
	q := hub.PeerQuery{Limit: 2}
	for range 10 {
		page, err := a.h.ListPeers(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range page.Peers {
			ids = append(ids, p.ID)
			nodes[p.Node]++
		}
		if page.Next == "" {
			break
		}
		q.After = page.Next
	}
	if len(ids) != 5 || !slices.IsSorted(ids) || nodes["a"] != 2 || nodes["b"] != 3 {
		t.Fatalf("listed %v by node %v", ids, nodes)
	}
	info, err := b.h.Nodes(t.Context())
	if err != nil || len(info) != 2 || info[0].Node != "b" || info[0].Peers != 3 || info[1].Node != "a" || info[1].Peers != 2 {
		t.Fatalf("nodes from b: %+v, %v", info, err)
	}

	gone, err := a.h.Disconnect(t.Context(), hub.Disconnect{User: "bob", Code: 4008, Revoke: true})
	if err != nil || len(gone) != 3 || gone[0].Node != "b" {
		t.Fatalf("kick bob from a: %+v, %v", gone, err)
	}
	for _, c := range bobs {
		testkit.Recv(t, c.Done(), "bob's connection closed")
		var ce *peer.CloseError
		if !errors.As(c.Err(), &ce) || ce.Code != 4008 {
			t.Errorf("bob closed with %v, want 4008", c.Err())
		}
	}
	if _, ok := b.h.RevokedBefore("bob"); !ok {
		t.Error("node b did not record the revocation")
	}
}
