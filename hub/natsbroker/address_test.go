package natsbroker_test

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/hub/natsbroker"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
)

// rpc.call across nodes: a peer by id on another node, with its progress
// and its errors; a user with peers on three nodes, all answering one
// call; a topic; a target whose node is lost mid-call.
func TestAddressAcrossNodes(t *testing.T) {
	url := startNATS(t)
	a, b, c := startRouteNode(t, url, "a", nil), startRouteNode(t, url, "b", nil), startRouteNode(t, url, "c", nil)
	started, ended := make(chan struct{}, 4), make(chan error, 4)
	caller, _ := attach(t, a, &peer.Options{}, "alice", nil)
	var ids []string
	for _, n := range []*node{a, b, c} {
		pc, p := attach(t, n, &peer.Options{}, "alice", provider(n.b.Node(), started, ended))
		if err := pc.Call(t.Context(), "rpc.subscribe", []string{"room.7"}, nil); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, p.ID())
	}
	onC := ids[2]
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	eventually(t, a, "a to know b and c, and their peers of alice", func() bool {
		onB, _ := natsbroker.RosterOf(a.b, "b")
		onC, _ := natsbroker.RosterOf(a.b, "c")
		return len(a.b.Members()) == 2 && onB["alice"] == 1 && onC["alice"] == 1
	})
	eventuallyPresent(t, a, "room.7", 3)

	var me hub.PeerInfo
	if err := caller.Call(ctx, "rpc.whoami", nil, &me); err != nil || me.Node != "a" || me.User != "alice" || me.ID == "" {
		t.Fatalf("rpc.whoami on a: %+v, %v", me, err)
	}
	var res struct{ By string }
	if err := caller.Call(ctx, "rpc.call", map[string]any{"peer": onC, "method": "svc.echo", "params": []int{1}}, &res); err != nil || res.By != "c" {
		t.Fatalf("rpc.call to a peer on c: %+v, %v", res, err)
	}
	err := caller.Call(ctx, "rpc.call", map[string]any{"peer": onC, "method": "svc.fail"}, nil)
	if e, ok := errors.AsType[*peer.Error](err); !ok || e.Code != 4001 || string(e.Data) != `{"retry":false}` {
		t.Fatalf("svc.fail on c: %v", err)
	}
	wantCode(t, caller.Call(ctx, "rpc.call", map[string]any{"peer": "no-such-peer", "method": "svc.echo"}, nil), peer.CodeNoSuchPeer)

	for _, to := range []map[string]any{{"user": "alice"}, {"topic": "room.7"}} {
		to["method"] = "svc.echo"
		var all struct {
			Results []struct {
				Peer   struct{ ID, User, Node string }
				Result struct{ By string }
				Error  *peer.Error
			}
		}
		if err := caller.Call(ctx, "rpc.call", to, &all); err != nil {
			t.Fatalf("rpc.call %v: %v", to, err)
		}
		var got []string
		for _, r := range all.Results {
			if r.Error != nil || r.Peer.Node != r.Result.By || r.Peer.User != "alice" {
				t.Fatalf("rpc.call %v: entry %+v", to, r)
			}
			got = append(got, r.Peer.Node)
		}
		sort.Strings(got)
		if strings.Join(got, ",") != "a,b,c" {
			t.Fatalf("rpc.call %v reached %v, want a peer on each of a, b, c", to, got)
		}
	}

	// A call to c's peer, in flight when c is lost: -32006, nothing hangs.
	progress := make(chan json.RawMessage, 1)
	errc := make(chan error, 1)
	go func() {
		pctx := peer.WithProgress(ctx, func(data json.RawMessage) { progress <- data })
		errc <- caller.Call(pctx, "rpc.call", map[string]any{"peer": onC, "method": "svc.wait"}, nil)
	}()
	if got := testkit.Recv(t, progress, "progress"); string(got) != `"started"` {
		t.Fatalf("progress %s", got)
	}
	testkit.Recv(t, started, "started")
	for _, n := range []*node{a, c} { // the caller's node and the target's
		if st := n.h.Stats().Routes; st.InFlight != 1 {
			t.Fatalf("node %s: %d calls in flight, want the call to c's peer", n.b.Node(), st.InFlight)
		}
	}
	c.b.Conn().Close() // c is lost: it stops answering and its heartbeats stop
	wantCode(t, testkit.Recv(t, errc, "errc"), peer.CodeProviderLost)
	if st := a.h.Stats().Routes; st.InFlight != 0 {
		t.Fatalf("stats %+v", st)
	}
}
