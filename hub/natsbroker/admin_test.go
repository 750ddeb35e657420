package natsbroker_test

import (
	"errors"
	"slices"
	"testing"
	"time"

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

// refusalsOf is a node's last refusals, as a server's Audit keeps them.
type refusalsOf []hub.RefusalDetail

func (r refusalsOf) Refusals(limit int) []hub.RefusalDetail { return r[:min(limit, len(r))] }

// admin.refusals gathers the last refusals of both nodes, newest first,
// each with its node.
func TestAdminRefusalsAcrossNodes(t *testing.T) {
	url := startNATS(t)
	a, b := startQuietNode(t, url, "a", 0), startQuietNode(t, url, "b", 0)
	testkit.WaitFor(t, "the nodes know each other", func() bool {
		return len(a.b.Members()) == 1 && len(b.b.Members()) == 1
	})
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	a.h.SetRefusals(refusalsOf{{Time: at(3), Target: "a3"}, {Time: at(1), Target: "a1"}})
	b.h.SetRefusals(refusalsOf{{Time: at(4), Target: "b4"}, {Time: at(2), Target: "b2"}})

	got, err := a.h.ListRefusals(t.Context(), hub.RefusalQuery{Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, r := range got {
		seen = append(seen, r.Node+":"+r.Target)
	}
	if want := []string{"b:b4", "a:a3", "b:b2"}; !slices.Equal(seen, want) {
		t.Fatalf("listed %v, want %v", seen, want)
	}
}

// Defect: a node that did not answer an admin request in time was left
// out silently: a listing lacked its peers, and a kick by user left that
// user's peers there connected, both saying nothing. Now each returns what
// the others answered, and names the node.
func TestAdminNamesStalledNode(t *testing.T) {
	url := startNATS(t)
	a, b := startRouteNode(t, url, "a", nil), startRouteNode(t, url, "b", nil)
	for range 2 {
		attach(t, b, &peer.Options{}, "bob", nil)
	}
	beating(t, url, func() map[string]string { return map[string]string{"x": `{"node":"x"}`} }) // and answers nothing
	testkit.WaitFor(t, "a to know b and x", func() bool { return len(a.b.Members()) == 2 })

	isX := func(err error) bool {
		ue, ok := errors.AsType[*hub.UnansweredError](err)
		return ok && slices.Equal(ue.Nodes, []string{"x"})
	}
	page, err := a.h.ListPeers(t.Context(), hub.PeerQuery{})
	if len(page.Peers) != 2 || page.Peers[0].Node != "b" || !isX(err) {
		t.Fatalf("listing: %+v, %v; want b's two peers and x named", page, err)
	}
	nodes, err := a.h.Nodes(t.Context())
	if len(nodes) != 2 || !isX(err) {
		t.Fatalf("nodes: %+v, %v; want a and b, and x named", nodes, err)
	}
	gone, err := a.h.Disconnect(t.Context(), hub.Disconnect{User: "bob"})
	if len(gone) != 2 || !isX(err) {
		t.Fatalf("kick bob: %+v, %v; want b's two peers closed and x named", gone, err)
	}
}
