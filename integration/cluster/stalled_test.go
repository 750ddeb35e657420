package cluster_test

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/client"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
)

// TestUserCallWithStalledNode: user token-1 has a peer on n2 and one on
// n3, user token-2 one on n2 only; n3 is stopped (SIGSTOP: its sockets
// stay open, it answers nothing). A call of token-1 from n1 answers
// within its timeout with n2's peer's result and names n3 ("incomplete",
// "unanswered"); a call of token-2 does not ask n3, which has none of its
// peers, and is complete.
func TestUserCallWithStalledNode(t *testing.T) {
	hubs := startTokenNodes(t, 3, "alice-secret", "bob-secret", "caller-secret")
	where := func(node string) *peer.Mux {
		mux := peer.NewMux()
		mux.Handle("where", peer.Func(func(context.Context, struct{}) (string, error) { return node, nil }))
		return mux
	}
	dialAs(t, hubs[1], "alice-secret", where("n2"))
	dialAs(t, hubs[2], "alice-secret", where("n3"))
	dialAs(t, hubs[1], "bob-secret", where("n2"))
	caller, _ := dialAs(t, hubs[0], "caller-secret", nil)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	const timeout = time.Second
	call := func(user string) (client.PeerResults, time.Duration) {
		t.Helper()
		var all client.PeerResults
		start := time.Now()
		params := map[string]any{"user": user, "method": "where", "timeout": timeout.Milliseconds()}
		if err := caller.Call(ctx, "rpc.call", params, &all); err != nil {
			t.Fatalf("rpc.call of %s: %v", user, err)
		}
		return all, time.Since(start)
	}
	// n1 learns of the other nodes and their users from what they tell.
	testkit.WaitFor(t, "n1 to reach token-1's peers on n2 and n3, and token-2's", func() bool {
		alice, _ := call("token-1")
		bob, _ := call("token-2")
		return len(alice.Results) == 2 && !alice.Incomplete && len(bob.Results) == 1 && !bob.Incomplete
	})

	stalled := hubs[2].Pid()
	if err := syscall.Kill(stalled, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(stalled, syscall.SIGCONT) }) // before the hubs are stopped

	// The calls are made before n1 takes n3 for gone (three heartbeats,
	// 3 s, without hearing from it): it is a stalled member.
	alice, took := call("token-1")
	t.Logf("token-1: %+v in %v", alice, took)
	if len(alice.Results) != 1 || alice.Results[0].Peer.Node != "n2" || alice.Results[0].Error != nil {
		t.Fatalf("token-1 with n3 stalled: results %+v, want n2's peer's", alice.Results)
	}
	if !alice.Incomplete || strings.Join(alice.Unanswered, ",") != "n3" {
		t.Fatalf("token-1 with n3 stalled: incomplete %v, unanswered %v, want n3 named", alice.Incomplete, alice.Unanswered)
	}
	if took >= 2*timeout {
		t.Fatalf("token-1 with n3 stalled: answered after %v, want within the call's timeout (%v)", took, timeout)
	}
	bob, took := call("token-2")
	t.Logf("token-2: %+v in %v", bob, took)
	if len(bob.Results) != 1 || bob.Results[0].Peer.Node != "n2" || bob.Incomplete {
		t.Fatalf("token-2 with n3 stalled: %+v, want n2's peer's result, complete: n3 has none of token-2's peers", bob)
	}
}
