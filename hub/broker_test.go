package hub_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
)

// relay is a Broker that records what it is given to forward.
type relay struct {
	h    *hub.BrokerHandle
	mu   sync.Mutex
	sent []string // topic=data
}

func (r *relay) Register(h *hub.BrokerHandle) { r.h = h }
func (r *relay) Node() string                 { return "n1" }
func (r *relay) Forward(topic string, data []byte) {
	r.mu.Lock()
	r.sent = append(r.sent, topic+"="+string(data))
	r.mu.Unlock()
}
func (r *relay) Stats() hub.BrokerStats {
	return hub.BrokerStats{Connected: true, Sent: uint64(len(r.sent))}
}

func TestBrokerForwardsLocalEventsOnly(t *testing.T) {
	r := &relay{}
	h := hub.New(&hub.Options{Policy: hub.AllowAll, Broker: r})
	c := connect(t, h, nil, nil)
	subscribe2(t, c, []string{"b.*"})
	if _, err := h.Publish(ctx(t), "b.local", 1); err != nil {
		t.Fatal(err)
	}
	if n := r.h.Deliver("b.remote", []byte("2")); n != 1 {
		t.Fatalf("Deliver reached %d, want 1", n)
	}
	if _, err := h.Publish(ctx(t), "b.local", 3); err != nil {
		t.Fatal(err)
	}
	var got []string
	for range 3 {
		e := c.next(t)
		got = append(got, fmt.Sprintf("%s=%s@%d", e.Topic, e.Data, e.Seq))
	}
	want := []string{"b.local=1@1", "b.remote=2@2", "b.local=3@3"}
	if !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	if want := []string{"b.local=1", "b.local=3"}; !slices.Equal(r.sent, want) {
		t.Fatalf("forwarded %v, want %v (an event from another node is not sent back)", r.sent, want)
	}
	if st := h.Stats().Cluster; st.Node != "n1" || !st.Connected || st.Sent != 2 {
		t.Fatalf("cluster stats %+v", st)
	}
}

func TestInterruptedMakesRecoveryIncomplete(t *testing.T) {
	r := &relay{}
	h := hub.New(&hub.Options{Policy: hub.AllowAll, Broker: r})
	for i := range 3 {
		r.h.Deliver("i.x", fmt.Appendf(nil, "%d", i))
	}
	before := h.Position()
	c := connectN(t, h, 10)
	if res := subscribeSince(t, c, "i.x", hub.Position{Epoch: before.Epoch, Seq: 1}); !*res.Recovered {
		t.Fatalf("recovered %v before any interruption, want true", *res.Recovered)
	}
	r.h.Interrupted() // the link broke: what other nodes published meanwhile is not here
	r.h.Deliver("i.x", []byte("3"))
	d := connectN(t, h, 10)
	if res := subscribeSince(t, d, "i.x", hub.Position{Epoch: before.Epoch, Seq: 1}); *res.Recovered {
		t.Fatal("recovered true from a position before an interruption")
	}
	// What other nodes published while the link was down would have come
	// after the latest position then: a subscriber that had it missed them.
	e := connectN(t, h, 10)
	if res := subscribeSince(t, e, "i.x", before); *res.Recovered {
		t.Fatal("recovered true from the position of the interruption")
	}
	f := connectN(t, h, 10)
	if res := subscribeSince(t, f, "i.x", h.Position()); !*res.Recovered {
		t.Fatal("recovered false from a position after the interruption")
	}
}

// stream is a Sequencer: an in-memory stream whose events a goroutine
// hands back to the hubs that read it, as NATS JetStream would.
type stream struct {
	h      *hub.BrokerHandle
	mu     sync.Mutex
	seq    uint64
	events chan streamed
	skip   uint64 // positions skipped before the next event, to test gaps
}

type streamed struct {
	seq         uint64
	topic, data string
}

func (s *stream) Register(h *hub.BrokerHandle) { s.h = h }
func (s *stream) Node() string                 { return "n1" }
func (s *stream) Forward(string, []byte)       { panic("Forward called on a Sequencer") }
func (s *stream) Stats() hub.BrokerStats       { return hub.BrokerStats{} }
func (s *stream) Epoch() string                { return "stream-1" }
func (s *stream) Sequence(_ context.Context, topic string, data []byte) (uint64, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq += 1 + s.skip
	s.skip = 0
	s.events <- streamed{s.seq, topic, string(data)}
	return s.seq, "stream-1", nil
}

var _ hub.Sequencer = (*stream)(nil)

// readBack hands the stream's events to its hub until the stream ends.
func readBack(t *testing.T, s *stream) {
	var wg sync.WaitGroup
	wg.Go(func() {
		for e := range s.events {
			if _, err := s.h.DeliverAt(e.seq, e.topic, []byte(e.data)); err != nil {
				t.Errorf("DeliverAt: %v", err)
			}
		}
	})
	t.Cleanup(func() { close(s.events); wg.Wait() })
}

func TestSequencerGivesPositions(t *testing.T) {
	s := &stream{events: make(chan streamed, 100), skip: 1}
	h := hub.New(&hub.Options{Policy: hub.AllowAll, Broker: s})
	readBack(t, s)
	c := connect(t, h, nil, nil)
	subscribe2(t, c, []string{"s.x"})
	var pub struct {
		Delivered int
		Seq       uint64
		Epoch     string
	}
	for i := range 3 {
		if err := c.Call(ctx(t), "rpc.publish", []any{"s.x", i}, &pub); err != nil {
			t.Fatal(err)
		}
		if want := uint64(i + 2); pub.Delivered != 1 || pub.Seq != want || pub.Epoch != "stream-1" {
			t.Fatalf("publish %d answered %+v, want 1 delivered at %d of stream-1", i, pub, want)
		}
		if e := c.next(t); e.Seq != pub.Seq || e.Epoch != "stream-1" || string(e.Data) != fmt.Sprint(i) {
			t.Fatalf("event %+v, want %d at %d", e, i, pub.Seq)
		}
	}
	// Resuming from 2 finds 3 and 4; from 0, position 1 was skipped (it
	// is not in this node's history), so not everything is there.
	d := connectN(t, h, 10)
	if res := subscribeSince(t, d, "s.x", hub.Position{Epoch: "stream-1", Seq: 2}); !*res.Recovered {
		t.Fatalf("recovered false from 2: %+v", res)
	}
	for _, want := range []uint64{3, 4} {
		if e := d.next(t); e.Seq != want {
			t.Fatalf("replayed %d, want %d", e.Seq, want)
		}
	}
	e := connectN(t, h, 10)
	if res := subscribeSince(t, e, "s.x", hub.Position{Epoch: "stream-1", Seq: 0}); *res.Recovered {
		t.Fatal("recovered true across a gap in the stream")
	}
	if _, err := s.h.DeliverAt(4, "s.x", json.RawMessage("7")); err == nil {
		t.Fatal("DeliverAt accepted a position not after the latest")
	}
}

// A stream replaced under a hub: the hub takes the new epoch, forgets the
// old history, closes its subscribers so that they resume, and tells
// them they missed events; publishing goes on under the new epoch.
func TestRestartAdoptsNewEpoch(t *testing.T) {
	s := &stream{events: make(chan streamed, 100)}
	h := hub.New(&hub.Options{Policy: hub.AllowAll, Broker: s})
	readBack(t, s)
	c := connectN(t, h, 10)
	subscribe2(t, c, []string{"r.x"})
	if err := c.Call(ctx(t), "rpc.publish", []any{"r.x", 1}, nil); err != nil {
		t.Fatal(err)
	}
	old := c.next(t)
	quiet := connectN(t, h, 10) // subscribes to nothing: left open

	s.h.Restart("stream-2", "cluster stream replaced")
	testkit.Recv(t, c.Done(), "the subscriber to be closed")
	var ce *peer.CloseError
	if !errors.As(c.Err(), &ce) || ce.Code != hub.CloseRestart {
		t.Fatalf("subscriber closed with %v, want code %d", c.Err(), hub.CloseRestart)
	}
	if err := quiet.Err(); err != nil {
		t.Fatalf("a peer without subscriptions closed: %v", err)
	}
	if p := h.Position(); p != (hub.Position{Epoch: "stream-2"}) {
		t.Fatalf("position %+v after restart, want stream-2 at 0", p)
	}
	d := connectN(t, h, 10)
	res := subscribeSince(t, d, "r.x", hub.Position{Epoch: old.Epoch, Seq: old.Seq})
	if *res.Recovered || res.Epoch != "stream-2" {
		t.Fatalf("resumed with %+v, want not recovered, in stream-2", res)
	}
	s.mu.Lock()
	s.seq = 0 // the new stream starts again at 1
	s.mu.Unlock()
	s.h.Restart("stream-1", "back") // the test stream names its events stream-1
	e := connectN(t, h, 10)
	subscribe2(t, e, []string{"r.x"})
	if err := e.Call(ctx(t), "rpc.publish", []any{"r.x", 2}, nil); err != nil {
		t.Fatal(err)
	}
	if got := e.next(t); got.Seq != 1 || got.Epoch != "stream-1" {
		t.Fatalf("event %+v after restart, want position 1", got)
	}
}

// A publish whose stream was replaced before its event came back fails:
// its position would mean another event in the new stream.
func TestPublishAcrossRestartFails(t *testing.T) {
	s := &stream{events: make(chan streamed, 100)}
	h := hub.New(&hub.Options{Policy: hub.AllowAll, Broker: s})
	c := connectN(t, h, 10)
	errc := make(chan error, 1)
	go func() { errc <- c.Call(ctx(t), "rpc.publish", []any{"r.y", 1}, nil) }()
	<-s.events // appended; not read back yet
	s.h.Restart("stream-2", "cluster stream replaced")
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("publish answered with a position of a stream no longer read")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("publish did not end")
	}
}
