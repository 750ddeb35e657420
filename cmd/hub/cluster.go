package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/hub/natsbroker"
	"go.uber.org/zap"
)

// clusterFlags are the flags that join the hub to a cluster over NATS.
type clusterFlags struct {
	nats      string
	jetStream bool
	listen    string
	store     string
	node      string
	timeout   time.Duration
}

func (c *clusterFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.nats, "nats", "", "join a cluster of hubs over NATS: comma-separated server `URLs`, or \"embedded\" to run a NATS server in this process (see -nats-listen)")
	fs.BoolVar(&c.jetStream, "nats-jetstream", false, "keep events in a JetStream stream: positions, history and recovery that span the cluster (every node needs it)")
	fs.StringVar(&c.listen, "nats-listen", "127.0.0.1:4222", "`address` of the embedded NATS server, for the other nodes to join")
	fs.StringVar(&c.store, "nats-store", "", "`directory` of the embedded NATS server's JetStream files (default: a new temporary one)")
	fs.StringVar(&c.node, "node", "", "this hub's `name` in the cluster (default: random)")
	fs.DurationVar(&c.timeout, "nats-timeout", 10*time.Second, "how long the hub waits for NATS at start with -nats-jetstream, and for the stream to be read")
}

// cluster is what joining a cluster started.
type cluster struct {
	broker *natsbroker.Broker
	server *natsserver.Server // the embedded one, or nil
	tmp    string             // its temporary directory, removed on close
}

// join connects to NATS (starting it first with -nats embedded) and sets
// the hub's Broker. It returns nil without -nats.
func (c *clusterFlags) join(ctx context.Context, o *hub.Options, log *zap.Logger) (*cluster, error) {
	if c.nats == "" {
		if c.jetStream {
			return nil, errors.New("-nats-jetstream needs -nats")
		}
		return nil, nil
	}
	cl := &cluster{}
	urls := c.nats
	if c.nats == "embedded" {
		if err := cl.startServer(c, log); err != nil {
			return nil, err
		}
		urls = cl.server.ClientURL()
	}
	cctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	b, err := natsbroker.Connect(cctx, &natsbroker.Options{
		URLs:      urls,
		Node:      c.node,
		JetStream: c.jetStream,
		Retention: o.History.Retention,
		MaxBytes:  o.History.MaxBytes,
		Logger:    log,
	})
	if err != nil {
		cl.close()
		return nil, err
	}
	cl.broker = b
	o.Broker = b.HubBroker()
	log.Info("joined cluster", zap.String("node", b.Node()), zap.String("nats", urls), zap.Bool("jetstream", c.jetStream))
	return cl, nil
}

// start hands the hub the other nodes' events; with JetStream, once it
// has read the stream.
func (cl *cluster) start(ctx context.Context, h *hub.Hub, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return cl.broker.Start(ctx, h)
}

// startServer runs the embedded NATS server.
func (cl *cluster) startServer(c *clusterFlags, log *zap.Logger) error {
	host, port, err := net.SplitHostPort(c.listen)
	if err != nil {
		return fmt.Errorf("-nats-listen: %w", err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return fmt.Errorf("-nats-listen: port %q", port)
	}
	if p == 0 {
		p = natsserver.RANDOM_PORT // NATS takes 0 for its default, 4222
	}
	dir := c.store
	if dir == "" && c.jetStream {
		if dir, err = os.MkdirTemp("", "switchboard-nats-"); err != nil {
			return err
		}
		cl.tmp = dir
	}
	s, err := natsserver.NewServer(&natsserver.Options{
		ServerName: "switchboard-embedded",
		Host:       host,
		Port:       p,
		JetStream:  c.jetStream,
		StoreDir:   dir,
		NoSigs:     true,
		NoLog:      true,
	})
	if err != nil {
		cl.close()
		return fmt.Errorf("embedded NATS: %w", err)
	}
	s.Start()
	if !s.ReadyForConnections(5 * time.Second) {
		s.Shutdown()
		cl.close()
		return fmt.Errorf("embedded NATS: not listening on %s within 5s", c.listen)
	}
	cl.server = s
	log.Info("embedded NATS listening", zap.String("url", s.ClientURL()), zap.Bool("jetstream", c.jetStream))
	return nil
}

// close disconnects from NATS and stops the embedded server.
func (cl *cluster) close() {
	if cl == nil {
		return
	}
	if cl.broker != nil {
		_ = cl.broker.Close()
	}
	if cl.server != nil {
		cl.server.Shutdown()
		cl.server.WaitForShutdown()
	}
	if cl.tmp != "" {
		_ = os.RemoveAll(cl.tmp)
	}
}
