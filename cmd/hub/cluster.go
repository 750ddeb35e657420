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
	"github.com/nats-io/nats.go"
	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/hub/natsbroker"
	"github.com/switchboard-rpc/switchboard/internal/redact"
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
	replicas  int
	creds     string
	nkey      string
	tlsCA     string
	tlsCert   string
	tlsKey    string
}

func (c *clusterFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.nats, "nats", "", "join a cluster of hubs over NATS: comma-separated server `URLs`, or \"embedded\" to run a NATS server in this process (see -nats-listen)")
	fs.BoolVar(&c.jetStream, "nats-jetstream", false, "keep events in a JetStream stream: positions, history and recovery that span the cluster (every node needs it)")
	fs.StringVar(&c.listen, "nats-listen", "127.0.0.1:4222", "`address` of the embedded NATS server, for the other nodes to join")
	fs.StringVar(&c.store, "nats-store", "", "`directory` of the embedded NATS server's JetStream files (default: a new temporary one)")
	fs.StringVar(&c.node, "node", "", "this hub's `name` in the cluster (default: random)")
	fs.DurationVar(&c.timeout, "nats-timeout", 10*time.Second, "how long the hub waits for NATS at start with -nats-jetstream, and for the stream to be read")
	fs.IntVar(&c.replicas, "nats-replicas", 0, "how many NATS servers keep the JetStream stream (0: 3 on a NATS cluster of three servers or more, else 1)")
	fs.StringVar(&c.creds, "nats-creds", "", "NATS credentials `file` (a user JWT and its NKey seed)")
	fs.StringVar(&c.nkey, "nats-nkey", "", "NATS NKey seed `file`")
	fs.StringVar(&c.tlsCA, "nats-tls-ca", "", "PEM `file` of the CA certificates that NATS servers' certificates must chain to")
	fs.StringVar(&c.tlsCert, "nats-tls-cert", "", "PEM certificate `file` this hub presents to NATS (with -nats-tls-key)")
	fs.StringVar(&c.tlsKey, "nats-tls-key", "", "PEM private key `file` of -nats-tls-cert")
}

// natsOptions returns the connection's credentials and TLS options.
func (c *clusterFlags) natsOptions() ([]nats.Option, error) {
	var opts []nats.Option
	if c.creds != "" {
		opts = append(opts, nats.UserCredentials(c.creds))
	}
	if c.nkey != "" {
		o, err := nats.NkeyOptionFromSeed(c.nkey)
		if err != nil {
			return nil, fmt.Errorf("-nats-nkey: %w", err)
		}
		opts = append(opts, o)
	}
	if c.tlsCA != "" {
		opts = append(opts, nats.RootCAs(c.tlsCA))
	}
	if (c.tlsCert == "") != (c.tlsKey == "") {
		return nil, errors.New("-nats-tls-cert and -nats-tls-key go together")
	}
	if c.tlsCert != "" {
		opts = append(opts, nats.ClientCert(c.tlsCert, c.tlsKey))
	}
	return opts, nil
}

// cluster is what joining a cluster started.
type cluster struct {
	broker    *natsbroker.Broker
	server    *natsserver.Server // the embedded one, or nil
	urls      string             // the NATS servers
	jetStream bool
	tmp       string // its temporary directory, removed on close
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
	nopts, err := c.natsOptions()
	if err != nil {
		return nil, err
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
		Replicas:  c.replicas,
		NATS:      nopts,
		Logger:    log,
	})
	if err != nil {
		cl.close()
		return nil, err
	}
	cl.broker = b
	cl.urls, cl.jetStream = urls, c.jetStream
	o.Broker = b.HubBroker()
	return cl, nil
}

// start hands the hub (made with the Options join set) the other nodes'
// events; with JetStream, once it has read the stream. The hub has joined
// the cluster once it is linked: without JetStream it may start before,
// serving its own events.
func (cl *cluster) start(ctx context.Context, timeout time.Duration, log *zap.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := cl.broker.Start(ctx); err != nil {
		return err
	}
	if err := cl.broker.Ready(); err != nil {
		log.Warn("cluster not joined yet: serving this node's own events until the link is up", zap.String("nats", redact.Text(cl.urls)), zap.String("error", redact.Text(err.Error())))
		return nil
	}
	log.Info("joined cluster", zap.String("nats", redact.Text(cl.urls)), zap.Bool("jetstream", cl.jetStream)) // log names the node
	return nil
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
	log.Info("embedded NATS listening", zap.String("url", redact.URL(s.ClientURL())), zap.Bool("jetstream", c.jetStream))
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
