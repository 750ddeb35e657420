package natsbroker_test

import (
	"errors"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
)

// Without JetStream, a node that finds another's events missing (a gap in
// their numbers, or a mark past the last one it got) counts them as lost
// and closes its subscribers, which, resuming, are told they missed
// events; events in order go through untouched.
func TestCoreGapsAreReported(t *testing.T) {
	for _, tc := range []struct {
		name string
		last string // the subject that shows the gap
	}{
		{"event", "switchboard.ev.x.run1.4.g.x"},
		{"mark", "switchboard.ev.x.run1.3"},
		{"restart", "switchboard.ev.x.run2.2.g.x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := startNATS(t)
			b := startNode(t, url, "b", false)
			sb := connect(t, b)
			var sub struct{ Epoch string }
			sb.call(t, "rpc.subscribe", map[string]any{"topic": "g.x"}, &sub)

			nc, err := nats.Connect(url) // node x, as the others see it
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			for _, subj := range []string{"switchboard.ev.x.run1.1.g.x", "switchboard.ev.x.run1.2.g.x", "switchboard.ev.x.run1.2"} {
				if err := nc.Publish(subj, []byte(`"ok"`)); err != nil {
					t.Fatal(err)
				}
			}
			var last event
			for range 2 {
				last = sb.next(t)
			}
			if err := sb.Err(); err != nil {
				t.Fatalf("subscriber closed without a gap: %v", err)
			}
			if err := nc.Publish(tc.last, []byte(`"after"`)); err != nil {
				t.Fatal(err)
			}
			testkit.Recv(t, sb.Done(), "the subscriber to be told of the gap")
			var ce *peer.CloseError
			if !errors.As(sb.Err(), &ce) || ce.Code != hub.CloseRestart {
				t.Fatalf("closed with %v, want %d", sb.Err(), hub.CloseRestart)
			}
			if lost := b.b.Stats().Lost; lost != 1 {
				t.Fatalf("lost %d, want 1", lost)
			}
			sc := connect(t, b)
			var res struct{ Recovered bool }
			sc.call(t, "rpc.subscribe", map[string]any{"topic": "g.x", "since": map[string]any{"epoch": last.Epoch, "seq": last.Seq}}, &res)
			if res.Recovered {
				t.Fatal("resumed with recovered true across the gap")
			}
		})
	}
}
