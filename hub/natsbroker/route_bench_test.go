package natsbroker_test

import (
	"context"
	"testing"
)

// BenchmarkRoute measures a call forwarded to a provider on the caller's
// own node against one forwarded to a provider on another node, over a
// NATS server in the same process (the peers are in-memory pipes).
func BenchmarkRoute(b *testing.B) {
	for _, remote := range []bool{false, true} {
		name := "local"
		if remote {
			name = "remote"
		}
		b.Run(name, func(b *testing.B) {
			url := startNATS(b)
			a, other := startRouteNode(b, url, "a", nil), startRouteNode(b, url, "b", nil)
			at := a
			if remote {
				at = other
			}
			prov, _ := join(b, at, provider("p", nil, nil), nil)
			if err := prov.Call(context.Background(), "rpc.provide", []string{"svc.echo"}, nil); err != nil {
				b.Fatal(err)
			}
			caller, _ := join(b, a, nil, nil)
			eventually(b, a, "a to know the provider", func() bool { return !remote || a.b.Provides("svc.echo") })
			ctx := context.Background()
			b.ResetTimer()
			for b.Loop() {
				if err := caller.Call(ctx, "svc.echo", []int{1}, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
