package natsbroker

import (
	"testing"

	"github.com/switchboard-rpc/switchboard/hub"
)

// A provider whose node last announced a call in flight that has ended
// since, and one with a call of this node's in flight: the call goes to
// the first, whichever order the members come in.
func TestChooseStaleAnnouncement(t *testing.T) {
	for range 20 { // the members are a map: their order changes
		d := &directory{members: map[string]*member{
			"stale": {providers: []hub.Provider{{Peer: "p1", Methods: []string{"work.*"}, InFlight: 1}}, ours: map[string]int{}},
			"held":  {providers: []hub.Provider{{Peer: "p2", Methods: []string{"work.*"}, InFlight: 1}}, ours: map[string]int{"p2": 1}},
		}}
		if node, provider, _ := d.choose("work.who"); node != "stale" || provider != "p1" {
			t.Fatalf("chose %s on %s, which has one of this node's calls in flight", provider, node)
		}
	}
}
