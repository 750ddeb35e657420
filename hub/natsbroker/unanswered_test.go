package natsbroker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/hub/natsbroker"
	"github.com/switchboard-rpc/switchboard/peer"
)

// A user call in a cluster with one node stalled (known, but answering no
// presence query): the answer comes within the presence wait, with the
// peers of the nodes that answered, and names the stalled node
// ("incomplete": true, "unanswered"), rather than leave its peers out
// silently.
func TestUserCallReportsStalledNode(t *testing.T) {
	url := startNATS(t)
	a, b := startRouteNode(t, url, "a", nil), startRouteNode(t, url, "b", nil)
	started, ended := make(chan struct{}, 4), make(chan error, 4)
	caller, _ := attach(t, a, &peer.Options{}, "alice", nil)
	attach(t, b, &peer.Options{}, "alice", provider("b", started, ended))

	// Node x sends its heartbeats, but is stalled otherwise: it answers
	// nothing. So is node y, whose roster says it has no peer: it is not
	// asked, nor named.
	beating(t, url, func() map[string]string {
		return map[string]string{"x": `{"node":"x"}`, "y": `{"node":"y","roster":{"run":"r1","seq":0}}`}
	})
	eventually(t, a, "a to know b (and its peer of alice), x and y", func() bool {
		users, _ := natsbroker.RosterOf(a.b, "b")
		return len(a.b.Members()) == 3 && users["alice"] == 1
	})

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var all struct {
		Results []struct {
			Peer   struct{ ID, User, Node string }
			Result struct{ By string }
			Error  *peer.Error
		}
		Incomplete bool
		Unanswered []string
	}
	start := time.Now()
	if err := caller.Call(ctx, "rpc.call", map[string]any{"user": "alice", "method": "svc.echo"}, &all); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if len(all.Results) != 1 || all.Results[0].Result.By != "b" || all.Results[0].Error != nil {
		t.Fatalf("results %+v, want b's peer's answer", all.Results)
	}
	if !all.Incomplete || strings.Join(all.Unanswered, ",") != "x" {
		t.Fatalf("incomplete %v, unanswered %v: want x named", all.Incomplete, all.Unanswered)
	}
	t.Logf("answered in %v", took)

	// With a timeout shorter than the presence wait (2 s), the answer
	// still comes, and names x, within about that timeout.
	start = time.Now()
	all.Incomplete, all.Unanswered = false, nil
	if err := caller.Call(ctx, "rpc.call", map[string]any{"user": "alice", "method": "svc.echo", "timeout": 300}, &all); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); !all.Incomplete || strings.Join(all.Unanswered, ",") != "x" || took >= 2*time.Second {
		t.Fatalf("with a 300 ms timeout: incomplete %v, unanswered %v, after %v", all.Incomplete, all.Unanswered, took)
	} else {
		t.Logf("with a 300 ms timeout, answered in %v", took)
	}
}
