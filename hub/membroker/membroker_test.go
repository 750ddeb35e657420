package membroker_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/hub/brokertest"
	"github.com/switchboard-rpc/switchboard/hub/membroker"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// cluster returns how brokertest starts the nodes of a new cluster.
func cluster(o *membroker.Options) func(t *testing.T) brokertest.StartNode {
	return func(*testing.T) brokertest.StartNode {
		c := membroker.New(o)
		return func(t *testing.T, name string, ho *hub.Options) (*hub.Hub, hub.Broker) {
			b := c.Node(name)
			t.Cleanup(func() { _ = b.Close() })
			ho.Broker = b.HubBroker()
			return hub.New(ho), ho.Broker
		}
	}
}

func TestConformance(t *testing.T) {
	brokertest.Run(t, cluster(nil))
}

func TestConformanceSequenced(t *testing.T) {
	brokertest.Run(t, cluster(&membroker.Options{Sequenced: true}))
}

// join connects a peer serving router to h over an in-memory pipe, until
// the end of the test.
func join(t *testing.T, h *hub.Hub, router peer.Router) (*peer.Conn, *hub.Peer) {
	t.Helper()
	ta, tb := peer.NewPipeTransport()
	srv := peer.NewConn(tb, &peer.Options{Router: h.Router(nil)})
	p := h.Join(srv, "", nil)
	c := peer.NewConn(ta, &peer.Options{Router: router})
	var wg sync.WaitGroup
	wg.Go(func() { _ = srv.Serve(context.Background()) })
	wg.Go(func() { _ = c.Serve(context.Background()) })
	t.Cleanup(func() {
		c.Close()
		wg.Wait()
		h.Leave(p)
	})
	return c, p
}

// A call in flight to a node that leaves the cluster ends with -32006,
// and the node's peers are no longer reached.
func TestNodeClosedDuringCall(t *testing.T) {
	c := membroker.New(nil)
	ba, bb := c.Node("a"), c.Node("b")
	defer bb.Close()
	defer ba.Close()
	ha := hub.New(&hub.Options{Policy: hub.AllowAll, Broker: ba.HubBroker()})
	hb := hub.New(&hub.Options{Policy: hub.AllowAll, Broker: bb.HubBroker()})

	started := make(chan struct{})
	mux := peer.NewMux()
	mux.Handle("svc.wait", peer.HandlerFunc(func(ctx context.Context, _ *peer.Request) (any, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	}))
	prov, _ := join(t, ha, mux)
	if err := prov.Call(t.Context(), "rpc.provide", []string{"svc.*"}, nil); err != nil {
		t.Fatal(err)
	}
	caller, _ := join(t, hb, nil)
	errc := make(chan error, 1)
	go func() { errc <- caller.Call(t.Context(), "svc.wait", nil, nil) }()
	testkit.Recv(t, started, "the call to start")
	if err := ba.Close(); err != nil {
		t.Fatal(err)
	}
	err := testkit.Recv(t, errc, "the call to end")
	if e, ok := errors.AsType[*peer.Error](err); !ok || e.Code != peer.CodeProviderLost {
		t.Fatalf("call to a node closed: %v, want -32006", err)
	}
	if bb.Provides("svc.wait") {
		t.Fatal("b still sees the provider of a node closed")
	}
	if st := ha.Stats().Cluster; st.Connected {
		t.Fatalf("a closed, stats %+v", st)
	}
}
