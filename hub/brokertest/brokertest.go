// Package brokertest checks that a broker keeps the promises of the hub's
// broker seam (hub.Broker, hub.Sequencer, hub.Directory, hub.Describer),
// as the hub relies on them: hubs linked by it, with peers on them, see
// each other's events in order and at sound positions, each other's
// presence, each other's provided methods, and call each other's peers.
//
// A broker's own tests run it with a function that starts the nodes of a
// fresh cluster, as net/nettest.TestConn does with a pipe:
//
//	func TestConformance(t *testing.T) {
//		brokertest.Run(t, func(t *testing.T) brokertest.StartNode {
//			c := membroker.New(nil)
//			return func(t *testing.T, name string, o *hub.Options) (*hub.Hub, hub.Broker) {
//				b := c.Node(name)
//				t.Cleanup(func() { _ = b.Close() })
//				o.Broker = b.HubBroker()
//				return hub.New(o), o.Broker
//			}
//		})
//	}
//
// Run runs the subtests that apply to what the broker is: a Sequencer's
// events must have the same positions on every node; a Directory's nodes
// must see each other's peers.
package brokertest

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
)

// StartNode starts a node of one cluster, named name (a word of letters,
// digits, '_' and '-'): a broker, linked to the cluster's other nodes,
// and the hub made with it from o (whose Broker it sets). It returns the
// hub and what it set as o.Broker. The node stops at the end of the test
// (t.Cleanup).
type StartNode func(t *testing.T, name string, o *hub.Options) (*hub.Hub, hub.Broker)

// Run runs the suite. newCluster returns how to start the nodes of a new
// cluster, linked to each other and to no other: each subtest makes its
// own.
func Run(t *testing.T, newCluster func(t *testing.T) StartNode) {
	var b hub.Broker
	t.Run("Kind", func(t *testing.T) {
		_, b = newCluster(t)(t, "kind", &hub.Options{})
		t.Logf("the broker is a %T", b)
	})
	_, seq := b.(hub.Sequencer)
	t.Run("Events", func(t *testing.T) { testEvents(t, newCluster(t), seq) })
	t.Run("Resume", func(t *testing.T) { testResume(t, newCluster(t), seq) })
	if _, ok := b.(hub.Directory); !ok {
		return
	}
	t.Run("Presence", func(t *testing.T) { testPresence(t, newCluster(t)) })
	t.Run("RoutedCalls", func(t *testing.T) { testRoutedCalls(t, newCluster(t)) })
	t.Run("ProviderLost", func(t *testing.T) { testProviderLost(t, newCluster(t)) })
	t.Run("AddressedCalls", func(t *testing.T) { testAddressedCalls(t, newCluster(t)) })
	t.Run("UserPeers", func(t *testing.T) { testUserPeers(t, newCluster(t)) })
	t.Run("RouteFunc", func(t *testing.T) { testRouteFunc(t, newCluster(t)) })
	if _, ok := b.(hub.Describer); ok {
		t.Run("Describe", func(t *testing.T) { testDescribe(t, newCluster(t)) })
	}
}

// node is a hub of a test cluster.
type node struct {
	name string
	h    *hub.Hub
	b    hub.Broker
}

func startNode(t *testing.T, start StartNode, name string) *node {
	t.Helper()
	h, b := start(t, name, &hub.Options{Policy: hub.AllowAll})
	return &node{name, h, b}
}

// note is a notification the hub sent a peer: rpc.event, rpc.join,
// rpc.leave.
type note struct {
	Method string
	Params json.RawMessage
}

// event is the params of an rpc.event.
type event struct {
	Topic string          `json:"topic"`
	Data  json.RawMessage `json:"data"`
	Seq   uint64          `json:"seq"`
	Epoch string          `json:"epoch"`
}

// client is a peer of a node.
type client struct {
	*peer.Conn
	id    string
	notes chan note // what the hub sent it, in order
}

// join connects a peer of user (nil: anonymous) to n over an in-memory
// pipe; its end serves router (nil: nothing) and receives the hub's
// notifications. Both ends close, and the peer leaves, when the test
// ends.
func (n *node) join(t *testing.T, user any, router peer.Router) *client {
	t.Helper()
	notes := make(chan note, 4096)
	ta, tb := peer.NewPipeTransport()
	srv := peer.NewConn(tb, &peer.Options{Router: n.h.Router(nil), MaxQueue: 4096})
	p := n.h.Join(srv, "", user)
	c := peer.NewConn(ta, &peer.Options{Router: routerFunc(func(method string) (peer.Handler, peer.Mode) {
		switch method {
		case "rpc.event", "rpc.join", "rpc.leave":
			return peer.HandlerFunc(func(_ context.Context, req *peer.Request) (any, error) {
				notes <- note{req.Method, append(json.RawMessage(nil), req.Params...)}
				return nil, nil
			}), peer.Inline
		}
		if router == nil {
			return nil, peer.Concurrent
		}
		return router.Lookup(method)
	})})
	var wg sync.WaitGroup
	wg.Go(func() { _ = srv.Serve(context.Background()) })
	wg.Go(func() { _ = c.Serve(context.Background()) })
	t.Cleanup(func() {
		c.Close()
		srv.Close()
		wg.Wait()
		n.h.Leave(p)
	})
	return &client{c, p.ID(), notes}
}

type routerFunc func(string) (peer.Handler, peer.Mode)

func (f routerFunc) Lookup(m string) (peer.Handler, peer.Mode) { return f(m) }

// call calls method, and fails the test on an error.
func (c *client) call(t *testing.T, method string, params, result any) {
	t.Helper()
	if err := c.Call(ctxFor(t), method, params, result); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
}

// next returns the next notification of c.
func (c *client) next(t *testing.T) note {
	t.Helper()
	return testkit.Recv(t, c.notes, "a notification")
}

// nextEvent returns the next event of c.
func (c *client) nextEvent(t *testing.T) event {
	t.Helper()
	n := c.next(t)
	var e event
	if n.Method != "rpc.event" || json.Unmarshal(n.Params, &e) != nil {
		t.Fatalf("got %s %s, want an rpc.event", n.Method, n.Params)
	}
	return e
}

// ctxFor returns a context that ends with the test, or after testkit.Wait.
func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Wait)
	t.Cleanup(cancel)
	return ctx
}

func wantCode(t *testing.T, what string, err error, code peer.Code) {
	t.Helper()
	if e, ok := errors.AsType[*peer.Error](err); !ok || e.Code != code {
		t.Fatalf("%s: %v, want code %d", what, err, code)
	}
}
