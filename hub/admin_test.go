package hub_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
)

func TestListPeersFiltersAndPages(t *testing.T) {
	h := hub.New(&hub.Options{Policy: hub.AllowAll})
	var alice []*client
	for i := range 5 {
		c := connect(t, h, "alice", nil)
		c.p.SetRemote(fmt.Sprintf("10.0.0.%d:1234", i))
		alice = append(alice, c)
	}
	bob := connect(t, h, "bob", nil)
	if err := bob.p.Subscribe("chat.room1"); err != nil {
		t.Fatal(err)
	}
	if err := alice[0].p.Subscribe("chat.>"); err != nil {
		t.Fatal(err)
	}
	_ = alice[1].p.Subscribe("news")

	page, err := h.ListPeers(ctx(t), hub.PeerQuery{User: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Peers) != 1 || page.Peers[0].ID != bob.p.ID() || page.Next != "" {
		t.Fatalf("bob's peers: %+v", page)
	}
	if got := page.Peers[0]; !slices.Equal(got.Topics, []string{"chat.room1"}) || got.User != "bob" || got.Since.IsZero() {
		t.Fatalf("bob: %+v", got)
	}

	// "chat.*" overlaps "chat.room1" and "chat.>", not "news".
	page, err = h.ListPeers(ctx(t), hub.PeerQuery{Topic: "chat.*"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{alice[0].p.ID(), bob.p.ID()}
	slices.Sort(want)
	if got := ids(page.Peers); !slices.Equal(got, want) {
		t.Fatalf("chat.* peers: %v, want %v", got, want)
	}

	// Alice's five, two at a time: every one once, in order.
	var seen []string
	q := hub.PeerQuery{User: "alice", Limit: 2}
	for range 10 {
		page, err := h.ListPeers(ctx(t), q)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Peers) > 2 {
			t.Fatalf("page of %d, limit 2", len(page.Peers))
		}
		seen = append(seen, ids(page.Peers)...)
		if page.Next == "" {
			break
		}
		q.After = page.Next
	}
	if len(seen) != 5 || !slices.IsSorted(seen) {
		t.Fatalf("alice's peers over pages: %v", seen)
	}
	for _, d := range mustList(t, h, hub.PeerQuery{User: "alice"}) {
		if d.Remote == "" {
			t.Fatalf("no remote address: %+v", d)
		}
	}
	if got := mustList(t, h, hub.PeerQuery{Node: "elsewhere"}); len(got) != 0 {
		t.Fatalf("peers of another node: %v", got)
	}
}

func mustList(t *testing.T, h *hub.Hub, q hub.PeerQuery) []hub.PeerDetail {
	t.Helper()
	page, err := h.ListPeers(ctx(t), q)
	if err != nil {
		t.Fatal(err)
	}
	return page.Peers
}

func ids(peers []hub.PeerDetail) []string {
	out := make([]string, len(peers))
	for i, p := range peers {
		out[i] = p.ID
	}
	return out
}

// A page holds no more than the hub's message size limit, however many
// peers the limit asks for: the rest is on the next page.
func TestListPeersBoundedInBytes(t *testing.T) {
	h := hub.New(&hub.Options{MaxMessage: 4096})
	for range 40 {
		c := connect(t, h, "someone-with-a-long-name", nil)
		c.p.SetRemote("192.168.100.100:65535")
	}
	q := hub.PeerQuery{Limit: 1000}
	total := 0
	for range 40 {
		page, err := h.ListPeers(ctx(t), q)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(page)
		if len(b) > 4096 {
			t.Fatalf("page of %d bytes, limit 4096", len(b))
		}
		total += len(page.Peers)
		if page.Next == "" {
			break
		}
		q.After = page.Next
	}
	if total != 40 {
		t.Fatalf("listed %d peers of 40", total)
	}
}

func TestListTopics(t *testing.T) {
	h := hub.New(nil)
	a := connect(t, h, "a", nil)
	b := connect(t, h, "b", nil)
	_ = a.p.Subscribe("chat.room1", "chat.>")
	_ = b.p.Subscribe("chat.room1", "news")
	if _, err := h.Publish(ctx(t), "chat.room2", "hi"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Publish(ctx(t), "chat.room2", "again"); err != nil {
		t.Fatal(err)
	}
	page, err := h.ListTopics(ctx(t), hub.TopicQuery{Pattern: "chat.>"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]hub.TopicDetail{}
	for _, d := range page.Topics {
		got[d.Topic] = d
	}
	if len(got) != 3 || got["chat.room1"].Subscribers != 2 || got["chat.>"].Subscribers != 1 ||
		got["chat.room2"].History != 2 || got["chat.room2"].Last != 2 || got["chat.room2"].Subscribers != 0 {
		t.Fatalf("topics under chat.>: %+v", page.Topics)
	}
	page, err = h.ListTopics(ctx(t), hub.TopicQuery{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Topics) != 2 || page.Next != page.Topics[1].Topic {
		t.Fatalf("first page of 2: %+v", page)
	}
	next, err := h.ListTopics(ctx(t), hub.TopicQuery{Limit: 2, After: page.Next})
	if err != nil {
		t.Fatal(err)
	}
	if len(next.Topics) != 2 || next.Next != "" || next.Topics[0].Topic <= page.Next {
		t.Fatalf("second page: %+v", next)
	}
	if _, err := h.ListTopics(ctx(t), hub.TopicQuery{Pattern: "bad..pattern"}); err == nil {
		t.Fatal("a bad pattern was listed")
	}
}

// A topic's published count goes on when its history is full, and
// counts its own events only, where its last position counts every
// topic's: the admin page's event rates come from it.
func TestListTopicsCountsPublished(t *testing.T) {
	h := hub.New(&hub.Options{History: hub.History{Retention: hub.Retention{Events: 2}}})
	for range 5 {
		if _, err := h.Publish(ctx(t), "busy", "x"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.Publish(ctx(t), "quiet", "x"); err != nil {
		t.Fatal(err)
	}
	page, err := h.ListTopics(ctx(t), hub.TopicQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Topics) != 2 {
		t.Fatalf("topics: %+v", page.Topics)
	}
	busy, quiet := page.Topics[0], page.Topics[1]
	if busy.Published != 5 || busy.History != 2 || quiet.Published != 1 || quiet.Last != 6 {
		t.Fatalf("busy %+v, quiet %+v", busy, quiet)
	}
}

func TestListProviders(t *testing.T) {
	h := hub.New(&hub.Options{Policy: hub.AllowAll})
	a := connect(t, h, "svc", nil)
	if err := a.Call(ctx(t), "rpc.provide", []string{"billing.*"}, nil); err != nil {
		t.Fatal(err)
	}
	list, err := h.ListProviders(ctx(t), "billing.charge")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Peer != a.p.ID() || list[0].User != "svc" || !slices.Equal(list[0].Methods, []string{"billing.*"}) {
		t.Fatalf("providers of billing.charge: %+v", list)
	}
	if list, _ := h.ListProviders(ctx(t), "other"); len(list) != 0 {
		t.Fatalf("providers of other: %+v", list)
	}
	if list, _ := h.ListProviders(ctx(t), ""); len(list) != 1 {
		t.Fatalf("every provider: %+v", list)
	}
}

func TestNodesAlone(t *testing.T) {
	h := hub.New(&hub.Options{Calls: func() uint64 { return 42 }})
	connect(t, h, "a", nil)
	nodes, err := h.Nodes(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 1 || nodes[0].Peers != 1 || !nodes[0].Linked || nodes[0].Started.IsZero() || nodes[0].Calls != 42 {
		t.Fatalf("nodes: %+v", nodes)
	}
}

// refusals is a node's last refusals, as a server's Audit keeps them.
type refusals []hub.RefusalDetail

func (r refusals) Refusals(limit int) []hub.RefusalDetail { return r[:min(limit, len(r))] }

// ListRefusals lists what the node's RefusalLister keeps, up to the
// limit; without one, none.
func TestListRefusalsAlone(t *testing.T) {
	h := hub.New(nil)
	if got, err := h.ListRefusals(ctx(t), hub.RefusalQuery{}); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("without a lister: %v, %v; want an empty list", got, err)
	}
	h.SetRefusals(refusals{{Target: "b"}, {Target: "a"}})
	got, err := h.ListRefusals(ctx(t), hub.RefusalQuery{Limit: 1})
	if err != nil || len(got) != 1 || got[0].Target != "b" {
		t.Fatalf("the last one: %+v, %v", got, err)
	}
}

func TestDisconnectUserWithCodeAndRevoke(t *testing.T) {
	h := hub.New(nil)
	a1 := connect(t, h, "alice", nil)
	a2 := connect(t, h, "alice", nil)
	b := connect(t, h, "bob", nil)
	before := time.Now()
	gone, err := h.Disconnect(ctx(t), hub.Disconnect{User: "alice", Reason: "account closed", Revoke: true, Before: before})
	if err != nil {
		t.Fatal(err)
	}
	if len(gone) != 2 {
		t.Fatalf("disconnected %v", gone)
	}
	for _, c := range []*client{a1, a2} {
		testkit.Recv(t, c.Done(), "alice's connection closed")
		var ce *peer.CloseError
		if !errors.As(c.Err(), &ce) || ce.Code != hub.CloseKicked || ce.Reason != "account closed" {
			t.Fatalf("alice closed with %v", c.Err())
		}
	}
	select {
	case <-b.Done():
		t.Fatal("bob was disconnected too")
	default:
	}
	if at, ok := h.RevokedBefore("alice"); !ok || !at.Equal(before) {
		t.Fatalf("alice revoked before %v, %v", at, ok)
	}
	if _, ok := h.RevokedBefore("bob"); ok {
		t.Fatal("bob revoked")
	}
	// An earlier revocation does not move it back.
	h.Revoke("alice", before.Add(-time.Hour))
	if at, _ := h.RevokedBefore("alice"); !at.Equal(before) {
		t.Fatalf("alice revoked before %v after an earlier Revoke", at)
	}
}

func TestDisconnectRefusesBadRequests(t *testing.T) {
	h := hub.New(nil)
	for _, d := range []hub.Disconnect{
		{},
		{User: "a", Code: 1005},
		{User: "a", Code: 999},
		{Peer: "x", Revoke: true},
		{User: "a", Reason: string(make([]byte, 124))},
	} {
		var e *peer.Error
		if _, err := h.Disconnect(ctx(t), d); !errors.As(err, &e) || e.Code != peer.CodeInvalidParams {
			t.Errorf("Disconnect(%+v): %v, want -32602", d, err)
		}
	}
}

func TestUnsubscribeUserTellsPeer(t *testing.T) {
	h := hub.New(nil)
	revoked := make(chan hub.Revoked, 1)
	router := routerFunc(func(method string) (peer.Handler, peer.Mode) {
		if method != "rpc.revoked" {
			return nil, peer.Concurrent
		}
		return peer.Func(func(_ context.Context, r hub.Revoked) (any, error) {
			revoked <- r
			return nil, nil
		}), peer.Inline
	})
	a := connect(t, h, "alice", router)
	_ = a.p.Subscribe("chat.room1", "chat.*", "news")
	out, err := h.Unsubscribe(ctx(t), hub.Unsubscribe{User: "alice", Topic: "chat.>"})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || !slices.Equal(out[0].Topics, []string{"chat.*", "chat.room1"}) {
		t.Fatalf("unsubscribed: %+v", out)
	}
	if got := a.p.Topics(); !slices.Equal(got, []string{"news"}) {
		t.Fatalf("left subscribed to %v", got)
	}
	r := testkit.Recv(t, revoked, "rpc.revoked")
	if !slices.Equal(r.Topics, []string{"chat.*", "chat.room1"}) {
		t.Fatalf("rpc.revoked: %+v", r)
	}
	// "chat.room1" does not cover "news".
	if out, _ := h.Unsubscribe(ctx(t), hub.Unsubscribe{Peer: a.p.ID(), Topic: "chat.room1"}); len(out) != 0 {
		t.Fatalf("unsubscribed again: %+v", out)
	}
}

func TestBroadcast(t *testing.T) {
	h := hub.New(nil)
	a := connect(t, h, "a", nil)
	_ = a.p.Subscribe("x", "y")
	out, err := h.Broadcast(ctx(t), []string{"x", "y", "z"}, []byte(`{"n":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 3 || out[0].Delivered != 1 || out[1].Delivered != 1 || out[2].Delivered != 0 || out[2].Position != 3 {
		t.Fatalf("broadcast: %+v", out)
	}
	for _, topic := range []string{"x", "y"} {
		e := testkit.Recv(t, a.events, "event on "+topic)
		if e.Topic != topic || string(e.Data) != `{"n":1}` {
			t.Fatalf("event %+v", e)
		}
	}
	if _, err := h.Broadcast(ctx(t), []string{"ok", "bad.*"}, []byte(`1`)); err == nil {
		t.Fatal("broadcast on a pattern")
	}
}
