package natsbroker_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/hub/natsbroker"
	"github.com/switchboard-rpc/switchboard/internal/hubtest"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
)

// startStreamNode starts a JetStream node that checks its stream every
// check.
func startStreamNode(t *testing.T, url, name string, check time.Duration) *node {
	t.Helper()
	return startNodeWith(t, &natsbroker.Options{URLs: url, Node: name, JetStream: true, StreamCheck: check})
}

// A stream deleted and created again under running nodes: no publish is
// answered with a position of the old epoch, the subscribers are closed
// and told, when they resume, that they missed events, and what is
// published then reaches them under the new epoch.
func TestStreamReplaced(t *testing.T) {
	url := startNATS(t)
	a := startStreamNode(t, url, "a", time.Hour) // a learns it by publishing
	b := startStreamNode(t, url, "b", 200*time.Millisecond)
	pub := connect(t, a)
	sb := connect(t, b)
	sb.call(t, "rpc.subscribe", map[string]any{"topic": "r.x"}, nil)
	var last event
	for i := range 3 {
		pub.call(t, "rpc.publish", []any{"r.x", i}, nil)
		last = sb.next(t)
	}
	old := last.Epoch

	hubtest.DeleteStream(t, url)

	// b notices within its check interval, and closes its subscriber.
	testkit.Recv(t, sb.Done(), "b's subscriber to be closed after the stream was replaced")
	var ce *peer.CloseError
	if !errors.As(sb.Err(), &ce) || ce.Code != hub.CloseRestart {
		t.Fatalf("subscriber closed with %v, want %d", sb.Err(), hub.CloseRestart)
	}
	if b.b.Stats().Resets != 1 {
		t.Fatalf("b counted %d resets, want 1", b.b.Stats().Resets)
	}

	// a publishes: it is never answered with the old epoch; once a has
	// noticed, its publishes succeed under the new one.
	var res publishResult
	deadline := time.Now().Add(testkit.Wait)
	for {
		ctx, cancel := context.WithTimeout(t.Context(), testkit.Wait)
		err := pub.Call(ctx, "rpc.publish", []any{"r.x", "new"}, &res)
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("publishing on a still fails: %v", err)
		}
	}
	if res.Epoch == old || res.Epoch != b.h.Position().Epoch {
		t.Fatalf("publish answered %+v; old epoch %s, b's %s", res, old, b.h.Position().Epoch)
	}

	// The subscriber resumes on b: told it missed events, and given what
	// the new stream has, under its epoch.
	sc := connect(t, b)
	var sub struct {
		Epoch     string
		Recovered bool
	}
	sc.call(t, "rpc.subscribe", map[string]any{"topic": "r.x", "since": map[string]any{"epoch": old, "seq": last.Seq}}, &sub)
	if sub.Recovered || sub.Epoch != res.Epoch {
		t.Fatalf("resumed with %+v, want not recovered, epoch %s", sub, res.Epoch)
	}
	// A publish that failed may have appended its event to the new
	// stream (it said so): the retries are there too.
	for {
		e := sc.next(t)
		if string(e.Data) != `"new"` || e.Seq > res.Seq || e.Epoch != res.Epoch {
			t.Fatalf("got %+v, want the new event at %d of %s", e, res.Seq, res.Epoch)
		}
		if e.Seq == res.Seq {
			break
		}
	}
	if err := b.b.Ready(); err != nil {
		t.Fatalf("b not ready after adopting the new stream: %v", err)
	}
}

// While the link is up but the stream cannot be reached (JetStream off on
// the server), the node says it cannot publish: Stats().Connected is
// false, and Ready gives the reason; Close does not wait for the stream.
func TestStreamUnavailable(t *testing.T) {
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	if !s.ReadyForConnections(5 * time.Second) {
		t.Fatal("NATS not ready")
	}
	n := startStreamNode(t, s.ClientURL(), "a", 50*time.Millisecond)
	if err := n.b.Ready(); err != nil || !n.b.Stats().Connected {
		t.Fatalf("ready %v, connected %v at start", err, n.b.Stats().Connected)
	}
	if err := s.DisableJetStream(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the node to say the stream is unavailable", func() bool {
		err := n.b.Ready()
		return err != nil && strings.Contains(err.Error(), "cluster stream unavailable") && !n.b.Stats().Connected
	})
	if !n.b.Conn().IsConnected() {
		t.Fatal("the link went down: the test is not of a stream unavailable")
	}
	// Closing does not wait for a stream that does not answer.
	start := time.Now()
	_ = n.b.Close()
	if took := time.Since(start); took > 4*time.Second {
		t.Fatalf("Close took %v with the stream unavailable", took)
	}
}
