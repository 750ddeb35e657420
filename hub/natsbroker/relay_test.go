package natsbroker_test

import (
	"slices"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

// Without JetStream, a node that finds another's events missing (a gap in
// their numbers, or a mark past the last one it got) counts them as lost,
// asks the sender which topics they carried, and sends rpc.missed to the
// subscribers of those topics only, without closing anyone; resuming,
// they are told they missed events. When the sender cannot say, every
// subscriber is told. Events in order go through untouched.
func TestCoreGapsAreReported(t *testing.T) {
	for _, tc := range []struct {
		name    string
		last    string // the subject that shows the gap
		next    string // the next event, on g.y
		answer  string // what node x answers about it; "": nothing
		toldOff bool   // the subscriber of another topic is told too
	}{
		{"event", "switchboard.ev.x.run1.4.g.x", "switchboard.ev.x.run1.5.g.y", `{"topics":["g.x"]}`, false},
		{"mark", "switchboard.ev.x.run1.3", "switchboard.ev.x.run1.4.g.y", `{"topics":["g.x"]}`, false},
		{"restart", "switchboard.ev.x.run2.2.g.x", "switchboard.ev.x.run2.3.g.y", `{"topics":["g.x"]}`, false},
		{"unknown", "switchboard.ev.x.run1.4.g.x", "switchboard.ev.x.run1.5.g.y", `{"all":true}`, true},
		{"unanswered", "switchboard.ev.x.run1.4.g.x", "switchboard.ev.x.run1.5.g.y", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := startNATS(t)
			b := startNode(t, url, "b", false)
			sb := connect(t, b)
			sb.call(t, "rpc.subscribe", map[string]any{"topic": "g.x"}, nil)
			other := connect(t, b)
			other.call(t, "rpc.subscribe", map[string]any{"topic": "g.y"}, nil)

			nc, err := nats.Connect(url) // node x, as the others see it
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			if tc.answer != "" {
				if _, err := nc.Subscribe("switchboard.gap.x", func(m *nats.Msg) { _ = m.Respond([]byte(tc.answer)) }); err != nil {
					t.Fatal(err)
				}
				if err := nc.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			for _, subj := range []string{"switchboard.ev.x.run1.1.g.x", "switchboard.ev.x.run1.2.g.x", "switchboard.ev.x.run1.2"} {
				if err := nc.Publish(subj, []byte(`"ok"`)); err != nil {
					t.Fatal(err)
				}
			}
			var last event
			for range 2 {
				last = sb.next(t)
			}
			if err := nc.Publish(tc.last, []byte(`"after"`)); err != nil {
				t.Fatal(err)
			}
			if got := testkit.Recv(t, sb.missed, "the subscriber to be told of the gap"); !slices.Equal(got, []string{"g.x"}) {
				t.Fatalf("rpc.missed names %v, want [g.x]", got)
			}
			// Another event on g.y comes after any rpc.missed to its subscriber.
			if err := nc.Publish(tc.next, []byte(`"later"`)); err != nil {
				t.Fatal(err)
			}
			if tc.toldOff {
				if got := testkit.Recv(t, other.missed, "the other subscriber to be told"); !slices.Equal(got, []string{"g.y"}) {
					t.Fatalf("rpc.missed names %v, want [g.y]", got)
				}
			}
			testkit.Recv(t, other.events, "the event on g.y")
			select {
			case got := <-other.missed:
				if !tc.toldOff {
					t.Fatalf("the subscriber of g.y was told %v", got)
				}
			default:
			}
			if err := sb.Err(); err != nil {
				t.Fatalf("subscriber closed: %v", err)
			}
			if lost := b.b.Stats().Lost; lost != 1 {
				t.Fatalf("lost %d, want 1", lost)
			}
			// The told subscriber resumes on the same connection.
			var res struct{ Recovered bool }
			sb.call(t, "rpc.subscribe", map[string]any{"topic": "g.x", "since": map[string]any{"epoch": last.Epoch, "seq": last.Seq}}, &res)
			if res.Recovered {
				t.Fatal("resumed with recovered true across the gap")
			}
		})
	}
}
