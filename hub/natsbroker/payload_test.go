package natsbroker_test

import (
	"context"
	"strings"
	"testing"

	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
)

// A call whose params are larger than NATS carries (1 MB by default,
// while a peer's message may be as large as the hub's limit) is the
// caller's to shrink: -32602 saying so, for a provided method and for an
// addressed peer on another node alike, not a provider lost.
func TestCallOverNATSPayload(t *testing.T) {
	url := startNATS(t)
	a, b := startQuietNode(t, url, "a", 4<<20), startQuietNode(t, url, "b", 4<<20)
	caller, _ := attach(t, a, &peer.Options{MaxMessage: 4 << 20}, "alice", nil)
	prov, bob := attach(t, b, &peer.Options{MaxMessage: 4 << 20}, "bob", provider("b", nil, nil))
	provide(t, prov, "svc.*")
	eventually(t, a, "a to know b's provider", func() bool { return a.b.Provides("svc.echo") })
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Wait)
	defer cancel()

	big := []string{strings.Repeat("x", 2<<20)}
	for name, call := range map[string]func() error{
		"provided": func() error { return caller.Call(ctx, "svc.echo", big, nil) },
		"addressed": func() error {
			return caller.Call(ctx, "rpc.call", map[string]any{"peer": bob.ID(), "method": "svc.echo", "params": big}, nil)
		},
	} {
		err := call()
		wantCode(t, err, peer.CodeInvalidParams)
		if !strings.Contains(err.Error(), "over what the cluster carries") {
			t.Errorf("%s: %v", name, err)
		}
	}
	// A call that fits still goes through.
	if err := caller.Call(ctx, "svc.echo", []int{1}, nil); err != nil {
		t.Fatal(err)
	}
}
