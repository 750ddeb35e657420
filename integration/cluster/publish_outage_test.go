package cluster_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/switchboard-rpc/switchboard/hub/natsbroker"
	"github.com/switchboard-rpc/switchboard/integration/internal/hubproc"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
)

// TestJetStreamPublishOutage: with JetStream, a publish answered with
// success is in the stream, at the position it was given, whatever the
// link went through; one made while the link is down is refused with
// -32000 at once and never stored; one made while the link hangs
// (nothing closed, nothing answered) is refused with -32000 after
// natsbroker.PublishWait, saying the event may yet be stored. Before, the
// last waited for JetStream's own timeout, and its error said only
// "context deadline exceeded".
func TestJetStreamPublishOutage(t *testing.T) {
	ns := startNATS(t)
	l := startLink(t, ns.s.Addr().String())
	h := hubproc.Start(t, &hubproc.Options{
		Args: []string{"-demo", "-nats", "nats://" + l.addr(), "-node", nodeName(0), "-nats-jetstream"},
	})
	c := dial(t, h)
	stream := openStream(t, ns)
	publish := func(data string) (published, error) { return publishAt(t, c, "oj.p", data) }
	stored := func(what string, res published, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		msg, err := stream.GetMsg(ctx, res.Seq)
		if err != nil || string(msg.Data) != `"`+what+`"` {
			t.Fatalf("%s: answered with position %d, where the stream has %v, %v", what, res.Seq, msg, err)
		}
	}
	refused := func(what string, err error, says string) {
		t.Helper()
		var e *peer.Error
		if !errors.As(err, &e) || e.Code != peer.CodeApplication || !strings.Contains(e.Message, says) {
			t.Fatalf("%s: %v, want -32000 saying %q", what, err, says)
		}
	}

	res, err := publish("before")
	stored("before", res, err)

	// The link hangs for a while, then recovers: the publish waits, and
	// succeeds with the event stored.
	l.stall()
	done := make(chan error, 1)
	go func() {
		var err error
		res, err = publish("short")
		done <- err
	}()
	testkit.WaitFor(t, "the event held on the way", func() bool { return l.holds(`"short"`) })
	l.resume()
	stored("short", res, testkit.RecvSlow(t, done, "the publish through a link that hung"))

	// The link hangs for longer than PublishWait: refused, in that time.
	l.stall()
	start := time.Now()
	_, err = publish("long")
	took := time.Since(start)
	refused("long", err, "may yet be stored")
	if took > natsbroker.PublishWait+10*time.Second {
		t.Fatalf("refused after %v, want about %v", took, natsbroker.PublishWait)
	}
	l.resume()
	res, err = publish("after")
	stored("after", res, err)

	// The link is down, and the node knows: refused at once, never stored.
	l.setDown(true)
	waitLinked(t, h, 0, false)
	start = time.Now()
	_, err = publish("down")
	refused("down", err, "was not sent")
	if took := time.Since(start); took >= natsbroker.PublishWait {
		t.Fatalf("refused after %v: it waited for an answer that could not come", took)
	}
	l.setDown(false)
	waitLinked(t, h, 0, true)
	res, err = publish("back")
	stored("back", res, err)
	for seq := uint64(1); seq < res.Seq; seq++ {
		if msg, err := stream.GetMsg(t.Context(), seq); err == nil && string(msg.Data) == `"down"` {
			t.Fatalf("the event refused while the link was down is in the stream at %d", seq)
		}
	}
}

// openStream returns the cluster's stream, read straight from NATS.
func openStream(t *testing.T, ns *natsServer) jetstream.Stream {
	t.Helper()
	nc, err := nats.Connect(ns.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, "SWITCHBOARD")
	if err != nil {
		t.Fatal(err)
	}
	return s
}
