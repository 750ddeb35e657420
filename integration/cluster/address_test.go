package cluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/client"
	"github.com/switchboard-rpc/switchboard/integration/internal/hubproc"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
)

// dialAs connects a Go client with a token and the methods of mux to a
// node, closed when the test ends, and returns it with its peer id.
func dialAs(t *testing.T, h *hubproc.Hub, token string, mux *peer.Mux) (*client.Client, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, h.WebSocketURL(), &client.Options{Token: token, Router: mux, MinBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("dial %s: %v", h.WebSocketURL(), err)
	}
	t.Cleanup(func() { _ = c.Close() })
	me, err := c.WhoAmI(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return c, me.ID
}

// startTokenNodes starts count nodes (startNodes) whose peers authenticate
// with the given secrets: the peer of the first is user token-1, and so on.
func startTokenNodes(t *testing.T, count int, secrets ...string) []*hubproc.Hub {
	t.Helper()
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte(strings.Join(secrets, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return startNodes(t, startNATS(t), count, "-token-file", tokens)
}

// TestAddressAcrossNodes: a caller on n1 calls a peer on n3 by its id; a
// user with a peer on each of the three nodes answers one call from each
// of them; n3 is killed with a call to its peer in flight: -32006, and
// nothing hangs.
func TestAddressAcrossNodes(t *testing.T) {
	hubs := startTokenNodes(t, 3, "alice-secret", "caller-secret")
	started := make(chan struct{}, 3)
	var ids []string
	for i, h := range hubs {
		mux := peer.NewMux()
		node := nodeName(i)
		mux.Handle("where", peer.Func(func(context.Context, struct{}) (string, error) { return node, nil }))
		mux.HandleFunc("long", func(ctx context.Context, _ *peer.Request) (any, error) {
			if err := peer.Progress(ctx, "working on "+node); err != nil {
				return nil, err
			}
			started <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		})
		_, id := dialAs(t, h, "alice-secret", mux)
		ids = append(ids, id)
	}
	caller, _ := dialAs(t, hubs[0], "caller-secret", nil)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	// The nodes learn of each other from their heartbeats: until n1
	// knows n3, n3's peer is no one's.
	var got string
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := caller.CallPeer(ctx, ids[2], "where", nil, &got)
		if e, ok := errors.AsType[*peer.Error](err); ok && e.Code == peer.CodeNoSuchPeer && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond) // polls the nodes' heartbeats
			continue
		}
		if err != nil || got != "n3" {
			t.Fatalf("n3's peer from n1: %q, %v", got, err)
		}
		break
	}
	wantCode(t, "a peer no node has", caller.CallPeer(ctx, "no-such-peer", "where", nil, nil), peer.CodeNoSuchPeer)

	// The user's peers on all three nodes answer a call from each node.
	for i, h := range hubs {
		c, _ := dialAs(t, h, "caller-secret", nil)
		var results []client.PeerResult
		deadline := time.Now().Add(10 * time.Second)
		for {
			all, err := c.CallPeers(ctx, client.Address{User: "token-1"}, "where", nil)
			if err != nil {
				t.Fatal(err)
			}
			results = all.Results
			if len(results) == 3 || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond) // polls the nodes' heartbeats
		}
		var where []string
		for _, r := range results {
			var s string
			if err := r.Decode(&s); err != nil || s != r.Peer.Node || r.Peer.User != "token-1" {
				t.Fatalf("from %s: entry %+v: %v", nodeName(i), r, err)
			}
			where = append(where, s)
		}
		sort.Strings(where)
		if strings.Join(where, ",") != "n1,n2,n3" {
			t.Fatalf("from %s, the user's peers answered from %v", nodeName(i), where)
		}
	}

	// n3 is killed with a call to its peer in flight.
	progress := make(chan string, 1)
	pctx := peer.WithProgress(ctx, func(data json.RawMessage) { progress <- string(data) })
	errc := make(chan error, 1)
	go func() { errc <- caller.CallPeer(pctx, ids[2], "long", nil, nil) }()
	testkit.RecvSlow(t, started, "started")
	if p := testkit.RecvSlow(t, progress, "progress"); p != `"working on n3"` {
		t.Fatalf("progress %s", p)
	}
	hubs[2].Kill()
	start := time.Now()
	wantCode(t, "the call in flight when n3 was killed", testkit.RecvSlow(t, errc, "errc"), peer.CodeProviderLost)
	t.Logf("-32006 %v after n3 was killed", time.Since(start).Round(time.Millisecond))
	// n1 goes on: its own peer answers, and n3's is no one's once n1 has
	// taken n3 for gone.
	if err := caller.CallPeer(ctx, ids[0], "where", nil, &got); err != nil || got != "n1" {
		t.Fatalf("n1's peer after n3 was killed: %q, %v", got, err)
	}
	wantCode(t, "n3's peer after n3 was killed", caller.CallPeer(ctx, ids[2], "where", nil, nil), peer.CodeNoSuchPeer)
}
