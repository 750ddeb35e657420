package rules_test

import (
	"testing"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/hub/rules"
)

// BenchmarkAllow measures one check on the publish and the call paths,
// with the walk-through's rules.
func BenchmarkAllow(b *testing.B) {
	set, err := rules.Compile(walkThrough)
	if err != nil {
		b.Fatal(err)
	}
	backend := token("orders", map[string]any{"role": "backend"}, "")
	alice := token("alice", nil, "")
	granted := token("dave", nil, `{"publish": ["chat.room1", "chat.room2"]}`)
	for _, bc := range []struct {
		name     string
		identity any
		action   hub.Action
		target   string
	}{
		{"publish/rule", backend, hub.Publish, "user.alice.inbox"},
		{"publish/grants", granted, hub.Publish, "chat.room2"},
		{"call/rule", alice, hub.Call, "add"},
		{"subscribe/user", alice, hub.Subscribe, "user.alice.inbox"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !set.Allow(bc.identity, bc.action, bc.target) {
					b.Fatal("refused")
				}
			}
		})
	}
}
