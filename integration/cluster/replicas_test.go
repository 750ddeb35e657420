package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/switchboard-rpc/switchboard/client"
	"github.com/switchboard-rpc/switchboard/integration/internal/hubproc"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

// startNATSCluster runs three NATS servers with JetStream, routed to each
// other as one cluster, until the test ends (or the test stops them). It
// returns them and their client URLs, comma-separated.
//
// The route ports must be known before any server starts, so they are
// picked free and released; another process may take one in between. A
// server that cannot listen on its route port says so at once, and the
// cluster is started again on other ports.
func startNATSCluster(t *testing.T) ([]*natsserver.Server, string) {
	t.Helper()
	var failures []string
	for range 5 {
		servers, urls, err := tryNATSCluster(t)
		if err == nil {
			return servers, urls
		}
		failures = append(failures, err.Error())
	}
	t.Fatalf("no NATS cluster in 5 attempts: %s", strings.Join(failures, "; "))
	return nil, ""
}

// tryNATSCluster is one attempt of startNATSCluster: on an error every
// server it started is stopped.
func tryNATSCluster(t *testing.T) ([]*natsserver.Server, string, error) {
	routes := make([]string, 3)
	ports := make([]int, 3)
	for i := range routes {
		addr := freePort(t)
		routes[i] = "nats://" + addr
		ports[i], _ = strconv.Atoi(addr[strings.LastIndexByte(addr, ':')+1:])
	}
	name := "sb-" + strconv.Itoa(ports[0]) // no other test's cluster
	servers := make([]*natsserver.Server, 0, 3)
	stop := func() {
		for _, s := range servers {
			s.Shutdown()
			s.WaitForShutdown()
		}
	}
	logs := make([]*fatalLog, 3)
	for i := range 3 {
		s, err := natsserver.NewServer(&natsserver.Options{
			ServerName: "s" + strconv.Itoa(i+1), Host: "127.0.0.1", Port: natsserver.RANDOM_PORT,
			JetStream: true, StoreDir: t.TempDir(), NoSigs: true,
			Cluster: natsserver.ClusterOpts{Name: name, Host: "127.0.0.1", Port: ports[i]},
			Routes:  natsserver.RoutesFromStr(strings.Join(routes, ",")),
		})
		if err != nil {
			stop()
			return nil, "", err
		}
		logs[i] = &fatalLog{failed: make(chan string, 1)}
		s.SetLoggerV2(logs[i], false, false, false)
		s.Start()
		servers = append(servers, s)
	}
	var urls []string
	for i, s := range servers {
		ready := make(chan bool, 1)
		go func() { ready <- s.ReadyForConnections(20 * time.Second) }()
		select {
		case msg := <-logs[i].failed:
			<-ready
			stop()
			return nil, "", errors.New(msg)
		case ok := <-ready:
			if !ok {
				stop()
				return nil, "", errors.New("NATS not ready within 20s")
			}
		}
		urls = append(urls, s.ClientURL())
	}
	t.Cleanup(stop)
	return servers, strings.Join(urls, ","), nil
}

// fatalLog is a NATS server's logger that keeps only its first fatal
// error (such as a port it cannot listen on).
type fatalLog struct{ failed chan string }

func (l *fatalLog) Fatalf(format string, v ...any) {
	select {
	case l.failed <- fmt.Sprintf(format, v...):
	default:
	}
}
func (*fatalLog) Noticef(string, ...any) {}
func (*fatalLog) Warnf(string, ...any)   {}
func (*fatalLog) Errorf(string, ...any)  {}
func (*fatalLog) Debugf(string, ...any)  {}
func (*fatalLog) Tracef(string, ...any)  {}

// Defect: the stream had one replica even on a NATS cluster of three
// servers, so losing the one that held it stopped every publish. With
// three NATS servers the stream has three replicas by default, and
// killing the server that leads it keeps publishing and delivery going on
// every node: every acknowledged event reaches every subscriber, in
// order, and none is told it missed any.
func TestStreamReplicas(t *testing.T) {
	servers, urls := startNATSCluster(t)
	hubs := make([]*hubproc.Hub, 3)
	for i := range hubs {
		hubs[i] = hubproc.Start(t, &hubproc.Options{
			Args:         []string{"-demo", "-nats", urls, "-node", nodeName(i), "-nats-jetstream", "-nats-timeout", "60s"},
			StartTimeout: 90 * time.Second,
		})
	}
	nc, err := nats.Connect(urls)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	streamInfo := func() *jetstream.StreamInfo {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		s, err := js.Stream(ctx, "SWITCHBOARD")
		if err != nil {
			t.Fatal(err)
		}
		return s.CachedInfo()
	}
	info := streamInfo()
	if info.Config.Replicas != 3 {
		t.Fatalf("the stream has %d replicas on three NATS servers, want 3", info.Config.Replicas)
	}

	subs := make([]<-chan received, 3)
	for i, h := range hubs {
		_, subs[i] = subscribe(t, dial(t, h), "rr.x", client.Position{}, 2000)
	}
	const total = 200
	pc := dial(t, hubs[1])
	acked := make(chan published, total)
	killed := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(acked)
		deadline := time.Now().Add(60 * time.Second)
		for n := 1; n <= total; {
			if n == total/4 {
				<-killed // the rest after the leader is gone
			}
			res, err := publishAt(t, pc, "rr.x", n)
			if err != nil {
				if time.Now().After(deadline) {
					t.Errorf("publish %d still fails: %v", n, err)
					return
				}
				continue // retried: the event may be in the stream twice
			}
			acked <- res
			n++
		}
	})
	for range total/4 - 1 {
		<-acked
	}
	leader := info.Cluster.Leader
	for _, s := range servers {
		if s.Name() == leader {
			s.Shutdown()
			s.WaitForShutdown()
		}
	}
	close(killed)
	var want []published
	for res := range acked {
		want = append(want, res)
	}
	wg.Wait()
	for i, ch := range subs {
		// Every acknowledged event arrives, in order (a retried one may
		// come twice).
		for _, w := range want {
			for {
				r := testkit.RecvSlow(t, ch, "an event")
				if r.missed {
					t.Fatalf("%s: told it missed events: %+v", nodeName(i), r)
				}
				if r.seq == w.Seq {
					if r.epoch != w.Epoch {
						t.Fatalf("%s: event %+v, want epoch %s", nodeName(i), r, w.Epoch)
					}
					break
				}
				if r.seq > w.Seq {
					t.Fatalf("%s: event %+v, but %d was acknowledged and skipped", nodeName(i), r, w.Seq)
				}
			}
		}
	}
	if got := streamInfo().Cluster.Leader; got == leader || got == "" {
		t.Fatalf("stream leader %q after %s was killed", got, leader)
	}
}
