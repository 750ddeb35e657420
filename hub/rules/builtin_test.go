package rules_test

import (
	"testing"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/hub/rules"
)

// TestBuiltinsAlwaysAllowed: an empty rule set lets anyone call exactly
// the built-in methods the hub's table says no Policy decides, and an
// empty grant does not take them away.
func TestBuiltinsAlwaysAllowed(t *testing.T) {
	s, err := rules.Compile(nil)
	if err != nil {
		t.Fatal(err)
	}
	open := 0
	for _, b := range hub.Builtins() {
		if got := s.Allow(nil, hub.Call, b.Name); got != b.Open() {
			t.Errorf("call %s: allowed %v, want %v", b.Name, got, b.Open())
		}
		if b.Open() {
			open++
		}
	}
	if open == 0 {
		t.Fatal("the table has no method every peer may call")
	}
	if s.Allow(nil, hub.Call, "rpc.nothing") {
		t.Error("rpc.nothing allowed")
	}
}
