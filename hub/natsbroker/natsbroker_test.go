package natsbroker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/hub/natsbroker"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// startNATS runs a NATS server on a free port of 127.0.0.1 until the end
// of the test, with JetStream storing in a temporary directory.
func startNATS(t testing.TB) string {
	t.Helper()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	if !s.ReadyForConnections(5 * time.Second) {
		t.Fatal("NATS server not ready within 5s")
	}
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	return s.ClientURL()
}

type event struct {
	Topic  string          `json:"topic"`
	Data   json.RawMessage `json:"data"`
	Seq    uint64          `json:"seq"`
	Epoch  string          `json:"epoch"`
	Replay string          `json:"replay,omitempty"`
}

// node is one hub of a test cluster.
type node struct {
	h *hub.Hub
	b *natsbroker.Broker
}

func startNode(t *testing.T, url, name string, jetStream bool) *node {
	t.Helper()
	return startNodeWith(t, &natsbroker.Options{URLs: url, Node: name, JetStream: jetStream})
}

// startNodeWith starts a node with the Broker made of o, until the end of
// the test.
func startNodeWith(t *testing.T, o *natsbroker.Options) *node {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	b, err := natsbroker.Connect(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	h := hub.New(&hub.Options{Policy: hub.AllowAll, Broker: b.HubBroker()})
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return &node{h, b}
}

// A Broker links the one hub made with it: Start before that hub exists
// fails, Start twice fails, and a second hub on the same Broker panics.
func TestBrokerLinksOneHub(t *testing.T) {
	url := startNATS(t)
	b, err := natsbroker.Connect(t.Context(), &natsbroker.Options{URLs: url, Node: "one"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	if err := b.Start(t.Context()); err == nil {
		t.Fatal("Start without a hub succeeded")
	}
	hub.New(&hub.Options{Broker: b.HubBroker()})
	if err := b.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := b.Start(t.Context()); err == nil {
		t.Fatal("Start twice succeeded")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a second hub registered with the same Broker")
		}
	}()
	hub.New(&hub.Options{Broker: b.HubBroker()})
}

// client is a peer of a node, whose events arrive on a channel.
type client struct {
	*peer.Conn
	events chan event
	missed chan []string // the topics of each rpc.missed, in order with the events
}

type routerFunc func(string) (peer.Handler, peer.Mode)

func (f routerFunc) Lookup(m string) (peer.Handler, peer.Mode) { return f(m) }

func connect(t *testing.T, n *node) *client {
	t.Helper()
	events := make(chan event, 10000)
	missed := make(chan []string, 100)
	c, _ := attach(t, n, &peer.Options{MaxQueue: 1 << 20}, nil, routerFunc(func(method string) (peer.Handler, peer.Mode) {
		switch method {
		case "rpc.event":
			return peer.Func(func(_ context.Context, e event) (any, error) {
				events <- e
				return nil, nil
			}), peer.Inline
		case "rpc.missed":
			return peer.Func(func(_ context.Context, p struct {
				Topics []string `json:"topics"`
				Epoch  string   `json:"epoch"`
				Seq    uint64   `json:"seq"`
			}) (any, error) {
				missed <- p.Topics
				return nil, nil
			}), peer.Inline
		}
		return nil, peer.Concurrent
	}))
	return &client{c, events, missed}
}

// attach joins a peer to n over an in-memory pipe: the hub's end is
// configured by srvOpts (its Router set to the hub's), the other end,
// returned, serves router. Both are closed, and the peer leaves, when the
// test ends.
func attach(t testing.TB, n *node, srvOpts *peer.Options, user any, router peer.Router) (*peer.Conn, *hub.Peer) {
	t.Helper()
	ta, tb := peer.NewPipeTransport()
	o := *srvOpts
	o.Router = n.h.Router(nil)
	srv := peer.NewConn(tb, &o)
	p := n.h.Join(srv, "", user)
	c := peer.NewConn(ta, &peer.Options{Router: router})
	var wg sync.WaitGroup
	wg.Go(func() { _ = srv.Serve(context.Background()) })
	wg.Go(func() { _ = c.Serve(context.Background()) })
	t.Cleanup(func() {
		c.Close()
		wg.Wait()
		n.h.Leave(p)
	})
	return c, p
}

func (c *client) call(t *testing.T, method string, params, result any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Wait)
	defer cancel()
	if err := c.Call(ctx, method, params, result); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
}

func (c *client) next(t *testing.T) event {
	t.Helper()
	return testkit.Recv(t, c.events, "an event")
}

type publishResult struct {
	Delivered int
	Seq       uint64
	Epoch     string
}

// TestFanOut publishes from two nodes on two topics and checks that a
// subscriber on each node gets every event once, in each publisher's
// order, the ones published on its own node too.
func TestFanOut(t *testing.T) {
	url := startNATS(t)
	a, b := startNode(t, url, "a", false), startNode(t, url, "b", false)
	subs := []*client{connect(t, a), connect(t, b)}
	for _, s := range subs {
		s.call(t, "rpc.subscribe", []string{"f.>"}, nil)
	}
	waitRelayed(t, a, b, subs)

	const n = 200
	var wg sync.WaitGroup
	for _, pub := range []struct {
		from  *node
		topic string
	}{{a, "f.x"}, {b, "f.y"}, {a, "f.y"}} {
		c := connect(t, pub.from)
		wg.Go(func() {
			for i := range n {
				if err := c.Notify(t.Context(), "rpc.publish", []any{pub.topic, fmt.Sprintf("%s/%s/%d", pub.from.b.Node(), pub.topic, i)}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, s := range subs {
		next := map[string]int{}
		seen := map[string]bool{}
		for range 3 * n {
			e := s.next(t)
			var d string
			_ = json.Unmarshal(e.Data, &d)
			var node, topic string
			var i int
			if _, err := fmt.Sscanf(d, "%1s/%3s/%d", &node, &topic, &i); err != nil {
				t.Fatalf("event data %q: %v", d, err)
			}
			key := node + "/" + topic
			if seen[d] || i != next[key] {
				t.Fatalf("got %s after %d of %s: not once, in order", d, next[key], key)
			}
			seen[d], next[key] = true, i+1
		}
		select {
		case e := <-s.events:
			t.Fatalf("event beyond the %d published: %+v", 3*n, e)
		default:
		}
	}
	if st := a.h.Stats().Cluster; st.Node != "a" || !st.Connected || st.Sent != 2*n+1 || st.Received != n+1 {
		t.Fatalf("node a stats %+v, want %d sent and %d received", st, 2*n+1, n+1)
	}
}

// waitRelayed publishes on each node until the subscribers of the other
// receive it: then both subscriptions to NATS are in place. It reads
// those events.
func waitRelayed(t *testing.T, a, b *node, subs []*client) {
	t.Helper()
	for _, from := range []*node{a, b} {
		if _, err := from.h.Publish(t.Context(), "f.ready", from.b.Node()); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range subs {
		for range 2 {
			if e := s.next(t); e.Topic != "f.ready" {
				t.Fatalf("event %+v before ready", e)
			}
		}
	}
}

// TestJetStreamResumeOnAnotherNode: positions are the stream's, the same
// on every node, and a subscriber that resumes on another node gets what
// it missed, once.
func TestJetStreamResumeOnAnotherNode(t *testing.T) {
	url := startNATS(t)
	a, b := startNode(t, url, "a", true), startNode(t, url, "b", true)
	pub := connect(t, a)
	sa := connect(t, a)
	var sub struct {
		Epoch string
		Seq   uint64
	}
	sa.call(t, "rpc.subscribe", map[string]any{"topic": "j.x"}, &sub)
	if sub.Epoch != b.h.Position().Epoch {
		t.Fatalf("epochs differ: %s on a, %s on b", sub.Epoch, b.h.Position().Epoch)
	}
	var last event
	for i := range 5 {
		var res publishResult
		pub.call(t, "rpc.publish", []any{"j.x", i}, &res)
		e := sa.next(t)
		if res.Seq != e.Seq || res.Delivered != 1 || e.Epoch != sub.Epoch {
			t.Fatalf("publish %+v, event %+v", res, e)
		}
		if i == 2 {
			last = e // the subscriber goes away after this one
		}
	}
	sb := connect(t, b)
	var res struct{ Recovered bool }
	sb.call(t, "rpc.subscribe", map[string]any{"topic": "j.x", "since": map[string]any{"epoch": last.Epoch, "seq": last.Seq}}, &res)
	if !res.Recovered {
		t.Fatal("recovered false on the other node")
	}
	for _, want := range []string{"3", "4"} {
		if e := sb.next(t); string(e.Data) != want {
			t.Fatalf("replayed %s, want %s", e.Data, want)
		}
	}
	var p publishResult
	pub.call(t, "rpc.publish", []any{"j.x", 5}, &p)
	if e := sb.next(t); string(e.Data) != "5" || e.Seq != p.Seq {
		t.Fatalf("live event %+v, want 5 at %d", e, p.Seq)
	}
}

func TestBadNodeName(t *testing.T) {
	if _, err := natsbroker.Connect(t.Context(), &natsbroker.Options{Node: "a.b"}); err == nil {
		t.Fatal("Connect accepted a node name with a dot")
	}
}
