package streams_test

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/client"
	"github.com/switchboard-rpc/switchboard/integration/internal/hubproc"
	"github.com/switchboard-rpc/switchboard/integration/internal/testclient"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

// One client with overlapping subscriptions (ov.> and ov.a) resumes both
// after a cut: each handler gets exactly the events of its own pattern,
// once and in order, those published while away included.
func TestOverlappingSubscriptionsResume(t *testing.T) {
	r := newRig(t)
	sub, pub := r.sub, r.pub
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	allHandle, all := collect(t, 1000)
	aHandle, onlyA := collect(t, 1000)
	if _, err := sub.Subscribe(ctx, "ov.>", allHandle); err != nil {
		t.Fatal(err)
	}
	if _, err := sub.Subscribe(ctx, "ov.a", aHandle); err != nil {
		t.Fatal(err)
	}
	topic := func(i int) string { return []string{"ov.a", "ov.b"}[i%2] }
	if err := publish(ctx, pub, 1, 100, topic); err != nil {
		t.Fatal(err)
	}
	expect := func(ch <-chan got, from, to, step int) {
		t.Helper()
		var last uint64
		for want := from; want <= to; want += step {
			g := testkit.RecvSlow(t, ch, "an event")
			if g.missed || g.n != want || g.topic != topic(want) || g.seq <= last {
				t.Fatalf("got %+v after seq %d; want event %d", g, last, want)
			}
			last = g.seq
		}
	}
	expect(all, 1, 100, 1)
	expect(onlyA, 2, 100, 2)
	r.publishAway(t, ctx, 101, 300, topic)
	if err := publish(ctx, pub, 301, 400, topic); err != nil {
		t.Fatal(err)
	}
	expect(all, 101, 400, 1)
	expect(onlyA, 102, 400, 2)
	for _, ch := range []<-chan got{all, onlyA} {
		noMore(t, ch)
	}
}

// After the hub restarts (a new epoch, no history), a subscriber comes
// back by itself, is told it missed events, and gets the new hub's.
func TestResumeAfterHubRestart(t *testing.T) {
	h := hubproc.StartDemo(t)
	sub, states := testclient.Dial(t, h.WebSocketURL(), nil)
	testclient.WaitState(t, states, client.StateConnected)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	handle, events := collect(t, 100)
	s, err := sub.Subscribe(ctx, "rs.t", handle)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := testclient.Dial(t, h.WebSocketURL(), nil)
	if err := publish(ctx, pub, 1, 5, fixed("rs.t")); err != nil {
		t.Fatal(err)
	}
	for want := 1; want <= 5; want++ {
		if g := testkit.RecvSlow(t, events, "an event"); g.n != want || g.missed {
			t.Fatalf("got %+v; want event %d", g, want)
		}
	}
	old := s.Position()
	h.Restart()
	testclient.WaitState(t, states, client.StateConnected)
	// The publisher's client reconnects too; its call waits for it.
	if err := publish(ctx, pub, 6, 8, fixed("rs.t")); err != nil {
		t.Fatal(err)
	}
	if g := testkit.RecvSlow(t, events, "an event"); !g.missed {
		t.Fatalf("first event after the restart %+v; want Missed", g)
	}
	for want := 6; want <= 8; want++ {
		g := testkit.RecvSlow(t, events, "an event")
		if g.missed || g.n != want {
			t.Fatalf("got %+v; want event %d", g, want)
		}
	}
	if pos := s.Position(); pos.Epoch == old.Epoch || pos.Epoch == "" || pos.Seq != 3 {
		t.Errorf("position after the restart %v; was %v; want a new epoch at 3", pos, old)
	}
}
