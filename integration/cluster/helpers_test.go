// Package cluster_test checks a cluster of hub processes joined over a
// real NATS server that the test runs in its own process: an event
// published on one node reaches the subscribers of every node once and in
// order; with JetStream, a subscriber resumes on another node, also after
// its node was killed; when NATS goes away, each node delivers its own
// events, and when NATS is back, the nodes are one again.
package cluster_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/switchboard-rpc/switchboard/client"
	"github.com/switchboard-rpc/switchboard/integration/internal/hubproc"
)

func TestMain(m *testing.M) { hubproc.Main(m) }

// natsServer is a NATS server run by the test, which it can stop and
// start again on the same port, with the same JetStream files.
type natsServer struct {
	t    *testing.T
	s    *natsserver.Server
	port int
	dir  string
}

// startNATS starts it on a port outside the ephemeral range (see
// hubproc.FreeAddr), which no outgoing connection takes while it is down.
func startNATS(t *testing.T) *natsServer {
	t.Helper()
	addr := freePort(t)
	port, err := strconv.Atoi(addr[strings.LastIndexByte(addr, ':')+1:])
	if err != nil {
		t.Fatal(err)
	}
	n := &natsServer{t: t, port: port, dir: t.TempDir()}
	n.start()
	t.Cleanup(n.stop)
	return n
}

func (n *natsServer) start() {
	n.t.Helper()
	s, err := natsserver.NewServer(&natsserver.Options{
		Host: "127.0.0.1", Port: n.port, JetStream: true, StoreDir: n.dir, NoSigs: true, NoLog: true,
	})
	if err != nil {
		n.t.Fatal(err)
	}
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		n.t.Fatal("NATS not ready within 10s")
	}
	n.s = s
}

func (n *natsServer) stop() {
	if n.s != nil {
		n.s.Shutdown()
		n.s.WaitForShutdown()
		n.s = nil
	}
}

func (n *natsServer) URL() string { return "nats://127.0.0.1:" + strconv.Itoa(n.port) }

// startNodes starts count hub processes named n1, n2... joined over NATS,
// with args more.
func startNodes(t *testing.T, ns *natsServer, count int, args ...string) []*hubproc.Hub {
	t.Helper()
	hubs := make([]*hubproc.Hub, count)
	for i := range hubs {
		hubs[i] = hubproc.Start(t, &hubproc.Options{
			Args: append([]string{"-demo", "-nats", ns.URL(), "-node", nodeName(i)}, args...),
		})
	}
	return hubs
}

func nodeName(i int) string { return "n" + strconv.Itoa(i+1) }

// waitLinked waits until the node's link to NATS is up (or down).
func waitLinked(t *testing.T, h *hubproc.Hub, i int, up bool) {
	t.Helper()
	want := 0.0
	if up {
		want = 1
	}
	name := fmt.Sprintf("switchboard_cluster_connected{node=%q}", nodeName(i))
	h.WaitMetrics(fmt.Sprintf("%s %v", name, want), func(m map[string]float64) bool {
		v, ok := m[name]
		return ok && v == want
	})
}

// dial connects a Go client to a node, closed when the test ends.
func dial(t *testing.T, h *hubproc.Hub) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, h.WebSocketURL(), &client.Options{MinBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("dial %s: %v", h.WebSocketURL(), err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// received is an event as a subscription's handler saw it.
type received struct {
	topic  string
	data   string
	seq    uint64
	epoch  string
	missed bool
}

// subscribe subscribes c to pattern (from since, if not zero), sending
// what its handler sees to the returned channel, which has room for size.
func subscribe(t *testing.T, c *client.Client, pattern string, since client.Position, size int) (*client.Subscription, <-chan received) {
	t.Helper()
	ch := make(chan received, size)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	sub, err := c.SubscribeWith(ctx, pattern, &client.SubscribeOptions{Since: since}, func(ev client.Event) {
		r := received{topic: ev.Topic, data: string(ev.Data), seq: ev.Seq, epoch: ev.Epoch, missed: ev.Missed}
		select {
		case ch <- r:
		default:
			t.Errorf("subscription %s: more than the %d events expected", pattern, size)
		}
	})
	if err != nil {
		t.Fatalf("subscribe %s: %v", pattern, err)
	}
	return sub, ch
}

func publish(t *testing.T, c *client.Client, topic string, data any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := c.Publish(ctx, topic, data); err != nil {
		t.Fatalf("publish on %s: %v", topic, err)
	}
}
