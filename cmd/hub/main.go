// Command hub runs a Switchboard hub: JSON-RPC 2.0 over WebSocket and HTTP
// POST on /rpc and /, the playground page for a plain GET of /, /healthz,
// /readyz and /metrics.
//
//	hub -addr 127.0.0.1:8080 -demo
//
// Settings may come from a config file, whose keys are the flags' names
// (plus "rules", who may do what); SWITCHBOARD_<NAME> environment
// variables override it, and flags override both. check-config checks a
// file and prints the configuration it makes, secrets redacted:
//
//	hub -config hub.yaml
//	hub check-config hub.yaml
//
// SIGINT or SIGTERM shuts it down gracefully: new connections are refused,
// calls in flight finish (up to -shutdown-timeout), WebSockets close with
// 1001, and the command exits 0. SIGHUP reloads the configuration (the
// rules, the token file, the JWT key or JWKS, the TLS certificate) without
// dropping a connection; see reload.go.
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/internal/redact"
	"github.com/switchboard-rpc/switchboard/peer"
	"github.com/switchboard-rpc/switchboard/server"
	"github.com/switchboard-rpc/switchboard/server/demo"
	"github.com/switchboard-rpc/switchboard/server/prom"
	"github.com/switchboard-rpc/switchboard/web"
	"go.uber.org/zap"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	run := run
	if sub, ok := subcommand(os.Args[1:]); ok { // check-config, version, gentoken, ...: tools.go
		run = sub
	}
	if err := run(ctx, os.Args[1:], os.Stderr, nil); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "hub:", redact.Text(err.Error()))
		}
		os.Exit(2)
	}
}

// config is what the flags say.
type config struct {
	addr            string
	demo            bool
	mcp             bool
	origins, hosts  string
	tokenFile       string
	logLevel        string
	logFormat       string
	maxMessage      int
	bodyTimeout     time.Duration
	maxBatch        int
	maxInFlight     int
	maxQueue        int
	maxQueueBytes   int
	queueBudget     int64
	maxSubs         int
	limits          limitFlags
	routes          routeFlags
	cluster         clusterFlags
	history         int
	historyAge      time.Duration
	historyBytes    int64
	compression     bool
	shutdownTimeout time.Duration
	minHeapMB       uint64

	listen listenConfig

	identity identityFlags // -config, JSON Web Tokens, rules
	flags    *flag.FlagSet // all of the above, for check-config
}

func parseFlags(args []string, out io.Writer) (*config, error) {
	var c config
	fs := flag.NewFlagSet("hub", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = usage(fs)
	fs.StringVar(&c.addr, "addr", "127.0.0.1:8080", "`address` to listen on")
	fs.BoolVar(&c.demo, "demo", false, "serve the demo methods and let any peer publish")
	fs.BoolVar(&c.mcp, "mcp", false, "serve the Model Context Protocol at /mcp: MCP clients call what peers provide as tools (on with -demo)")
	fs.StringVar(&c.origins, "origins", "", "comma-separated `patterns` of other origins allowed to connect from a browser: example.com, *.example.com, https://app.example.com; a port must be named when the origin has one: localhost:3000, *.example.com:* (default: same origin only)")
	fs.StringVar(&c.hosts, "hosts", "", "comma-separated host `names` the Host header may carry, with * patterns, IP addresses and CIDRs (10.0.0.0/8); the health probes pass whatever their Host (default: any; on loopback, localhost and IPs only)")
	fs.StringVar(&c.tokenFile, "token-file", "", "`file` of bearer tokens, one per line; when set, every /rpc request (and /metrics, unless -metrics-addr) needs one")
	fs.StringVar(&c.logLevel, "log-level", "info", "log `level`: debug, info, warn, error")
	fs.StringVar(&c.logFormat, "log-format", "auto", "log `format`: json, console, or auto (console on a terminal, json otherwise)")
	fs.IntVar(&c.maxMessage, "max-message", peer.DefaultMaxMessage, "largest WebSocket message or POST body, in `bytes`")
	fs.DurationVar(&c.bodyTimeout, "body-timeout", server.DefaultBodyTimeout, "the longest `duration` a POST body may take to arrive once its headers have")
	fs.IntVar(&c.maxBatch, "max-batch", peer.DefaultMaxBatch, "most `elements` in a batch")
	fs.IntVar(&c.maxInFlight, "max-inflight", peer.DefaultMaxInFlight, "most `calls` served at once per connection")
	fs.IntVar(&c.maxQueue, "max-queue", peer.DefaultMaxQueue, "most `messages` waiting to be written to one peer; a peer with that many events waiting is closed as too slow")
	fs.IntVar(&c.maxQueueBytes, "max-queue-bytes", peer.DefaultMaxQueueBytes, "most `bytes` waiting to be written to one peer; beyond it no new call is taken from it, and a peer with that much waiting is too slow for events")
	fs.Int64Var(&c.queueBudget, "queue-budget", server.DefaultQueueBudget, "most `bytes` waiting to be written to all peers together; beyond it, peers with something waiting take no new call until it moves (negative: no cap)")
	fs.IntVar(&c.maxSubs, "max-subscriptions", hub.DefaultMaxSubscriptions, "most topic `patterns` one peer may subscribe to")
	c.limits.register(fs)
	c.routes.register(fs)
	c.cluster.register(fs)
	fs.IntVar(&c.history, "history", hub.DefaultHistoryEvents, "most `events` kept per topic for rpc.history and resuming subscribers (0: keep none)")
	fs.DurationVar(&c.historyAge, "history-age", hub.DefaultHistoryAge, "the longest `time` an event is kept")
	fs.Int64Var(&c.historyBytes, "history-bytes", hub.DefaultHistoryTotal, "most `bytes` kept for all topics together")
	fs.BoolVar(&c.compression, "compression", false, "enable permessage-deflate on WebSockets")
	fs.DurationVar(&c.shutdownTimeout, "shutdown-timeout", 10*time.Second, "the longest `duration` calls in flight may take to finish on shutdown")
	fs.Uint64Var(&c.minHeapMB, "min-heap-mb", defaultMinHeapMB, "let the heap grow to this many `MiB` before the garbage collector runs, however little of it is live: fewer collections when the hub holds few connections (0: as GOGC says)")
	c.listen.flags(fs)
	c.identity.register(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if err := c.identity.load(fs); err != nil {
		return nil, err
	}
	if err := c.failClosed(fs); err != nil {
		return nil, err
	}
	c.flags = fs
	return &c, nil
}

// failClosed refuses settings that would open the hub by accident: an
// empty -addr (every interface), and anonymous set to false, on the
// command line, in the environment or in the file, with no way for a peer
// to authenticate, which would let every peer in.
func (c *config) failClosed(fs *flag.FlagSet) error {
	if strings.TrimSpace(c.addr) == "" {
		return errors.New("-addr is empty: name the address to listen on (\":8080\" for every interface)")
	}
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == "anonymous" })
	if set && !c.identity.anonymous && c.tokenFile == "" && !c.identity.usesJWT() {
		return errors.New("anonymous is false, but none of -token-file, -jwt-key and -jwks is set: no peer could authenticate, " +
			"and the hub would let every peer in; set one of them (an empty SWITCHBOARD_ variable counts as unset)")
	}
	return nil
}

// run runs the hub until ctx ends, then shuts it down. ready, if set, is
// told the address once the hub listens.
func run(ctx context.Context, args []string, stderr io.Writer, ready func(net.Addr)) error {
	c, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	if err := c.validate(); err != nil { // what check-config checks
		return err
	}
	log, level, err := newLogger(c.logLevel, c.logFormat, stderr)
	if err != nil {
		return err
	}
	defer log.Sync() //nolint:errcheck // nothing to do about it on exit
	for _, v := range c.identity.file.ignored {
		log.Warn("environment variable ignored", zap.String("name", v.name), zap.String("reason", v.reason))
	}
	defer startHeapFloor(c.minHeapMB << 20)()

	opts := &server.Options{
		AllowedOrigins: splitList(c.origins),
		AllowedHosts:   splitList(c.hosts),
		BodyTimeout:    c.bodyTimeout,
		QueueBudget:    c.queueBudget,
		BusyReaders:    c.limits.busyReaders,
		PingInterval:   c.limits.pingInterval,
		PingTimeout:    c.limits.pingTimeout,
		Compression:    c.compression,
		Root:           web.Handler(), // the playground, for plain GETs of /
		Logger:         log,
		Version:        hubVersion(),
		Conn: peer.Options{
			MaxMessage:    c.maxMessage,
			MaxBatch:      c.maxBatch,
			MaxInFlight:   c.maxInFlight,
			MaxQueue:      c.maxQueue,
			MaxQueueBytes: c.maxQueueBytes,
			MaxDepth:      c.limits.maxDepth,
			WriteStall:    c.limits.writeStall,
			Rate:          c.limits.rate,
			Burst:         c.limits.burst,
		},
	}
	opts.HandshakeTimeout = c.listen.handshakeTimeout
	opts.TrustedProxies = c.listen.trustedProxies
	opts.MaxConnsPerAddr = c.listen.maxConnsPerAddr
	mux := peer.NewMux()
	hubOpts := &hub.Options{MaxSubscriptions: c.maxSubs, MaxTopicLength: c.limits.maxTopicLen, MaxMessage: c.maxMessage, History: hub.History{
		Retention: hub.Retention{Events: c.history, Age: c.historyAge, Off: c.history <= 0},
		MaxBytes:  c.historyBytes,
	}}
	if c.demo {
		demo.Register(mux)
	}
	// What a reload replaces: the policy, authentication, the certificate.
	lv, err := newLive(ctx, c, args, level, log)
	if err != nil {
		return err
	}
	defer lv.close()
	hubOpts.Policy, opts.Authorize, opts.AuthorizeAdmin = lv.policy, lv.authorize, lv.authorizeAdmin
	var operator func(*http.Request) (any, error)
	opts.Authenticate, opts.Reauthenticate, operator = lv.serverAuth()
	c.routes.apply(hubOpts, c.identity.file.hasRules, log)
	cl, err := c.cluster.join(ctx, hubOpts, log)
	if err != nil {
		return err
	}
	defer cl.close()
	if cl != nil {
		log = log.With(zap.String("node", cl.broker.Node()))
		opts.Logger = log
	}
	opts.Router = mux
	// One audit trail for the server's refusals and the rules'.
	opts.Audit = server.NewAudit(log)
	hubOpts.OnRefused = opts.Audit.HubRefused
	metrics := prom.New()
	hubOpts.Calls = metrics.Calls // for admin.info: the page's calls per second
	opts.Hub = hub.New(hubOpts)
	lv.hub = opts.Hub
	if cl != nil {
		if err := cl.start(ctx, c.cluster.timeout, log); err != nil {
			return err
		}
		opts.Ready = cl.broker.Ready
	}
	opts.Ready = lv.ready(opts.Ready)
	opts.OnServe = metrics.Observe
	srv := server.New(opts)
	metrics.Watch(srv)
	stopMCP, mcpReloaded := mountMCP(c.mcp || c.demo, srv, c.maxInFlight, log)
	lv.reloaded = mcpReloaded

	routes := http.NewServeMux()
	routes.Handle("/", srv)
	routes.Handle("/rpc", srv)
	routes.Handle("/healthz", srv)
	routes.Handle("/readyz", srv)
	routes.Handle("/metrics", metrics)
	// No WriteTimeout: a call over POST may run long. No ReadTimeout: the
	// server bounds POST bodies itself (-body-timeout). IdleTimeout only
	// applies between requests; hijacking a WebSocket clears deadlines.
	hs := &http.Server{
		Handler:           srv.Guard(c.listen.hideMetrics(routes), &server.GuardOptions{Operator: operator, Open: openPath}),
		ReadHeaderTimeout: c.listen.headerTimeout,
		IdleTimeout:       c.listen.idleTimeout,
		ErrorLog:          httpErrorLog(log),
	}

	var certificate func(*tls.ClientHelloInfo) (*tls.Certificate, error)
	if lv.cur.Load().cert != nil {
		certificate = lv.certificate
	}
	ln, err := c.listen.listen(c.addr, certificate, log)
	if err != nil {
		return err
	}
	metrics.WatchListener(ln)
	stopMetrics, err := c.listen.serveMetrics(routes, srv.AdminHandler(operator), func(h http.Handler) http.Handler {
		return srv.Guard(h, &server.GuardOptions{ByAddress: true}) // no token there; Prometheus scrapes by address
	}, log)
	if err != nil {
		ln.Close()
		return err
	}
	// SIGHUP reloads (see reload.go), from now until run returns.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	wctx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() { defer close(watched); lv.watch(wctx, hup, log) }()
	defer func() { stopWatch(); <-watched; signal.Stop(hup) }()

	log.Info("hub listening", zap.String("addr", ln.Addr().String()), zap.Bool("demo", c.demo),
		zap.Bool("auth", opts.Authenticate != nil), zap.Bool("jwt", c.identity.usesJWT()), zap.Bool("rules", c.identity.file.hasRules),
		zap.Bool("tls", c.listen.tlsCert != ""))
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !tcp.IP.IsLoopback() && opts.Authenticate == nil {
		log.Warn("listening beyond loopback without -token-file: anyone who reaches this address can call the hub")
	}
	if ready != nil {
		ready(ln.Addr())
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()

	select {
	case err := <-served:
		_ = stopMetrics(context.Background())
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down", zap.Duration("timeout", c.shutdownTimeout))
	sctx, cancel := context.WithTimeout(context.Background(), c.shutdownTimeout)
	defer cancel()
	mcpErr := make(chan error, 1)
	go func() { mcpErr <- stopMCP(sctx) }() // the MCP sessions, whose streams hs.Shutdown waits for

	errc := make(chan error, 1)
	go func() { errc <- srv.Shutdown(sctx) }() // the WebSockets
	herr := hs.Shutdown(sctx)                  // the listener and plain HTTP requests
	serr := <-errc
	serr = errors.Join(serr, <-mcpErr)
	<-served
	if err := errors.Join(herr, serr, stopMetrics(sctx)); err != nil {
		log.Warn("shutdown timed out; connections closed", zap.Error(err))
	}
	log.Info("hub stopped")
	return nil
}

// limitFlags are the flags of the per-peer limits and liveness checks.
type limitFlags struct {
	rate                      float64
	burst, maxDepth           int
	maxTopicLen               int
	busyReaders               int
	writeStall                time.Duration
	pingInterval, pingTimeout time.Duration
}

func (l *limitFlags) register(fs *flag.FlagSet) {
	fs.Float64Var(&l.rate, "rate", 0, "the `number` of requests per second one peer may send, batch elements each counting (0: no limit; over it, -32004)")
	fs.IntVar(&l.burst, "burst", 0, "the `number` of requests one peer may send at once under -rate (default: one second's worth)")
	fs.IntVar(&l.busyReaders, "busy-readers", 0, "how many busy connections (their next message always waiting, as with many calls in flight) are read at once, so that they leave the others a core (0: one less than the cores Go uses, at least 1; negative: no cap)")
	fs.IntVar(&l.maxDepth, "max-depth", peer.DefaultMaxDepth, "deepest `nesting` of arrays and objects in a message (over it, -32600)")
	fs.IntVar(&l.maxTopicLen, "max-topic-len", hub.DefaultMaxTopicLength, "longest topic or pattern, in `bytes` (over it, -32602)")
	fs.DurationVar(&l.writeStall, "write-stall", peer.DefaultWriteStall, "how long writes to a peer may make no progress before it is closed (1008)")
	fs.DurationVar(&l.pingInterval, "ping-interval", peer.DefaultPingInterval, "how often each WebSocket peer is pinged (negative: never)")
	fs.DurationVar(&l.pingTimeout, "ping-timeout", peer.DefaultPingTimeout, "how long a peer may send nothing after a ping before it is closed (1001)")
}

// openPath says which requests on -addr need no token when the hub
// requires one: the health probes, and the playground's files, which hold
// nothing of the hub's. Every other path not served by the server itself
// (/metrics, and any added later) needs the operator's token (see
// access.operator).
func openPath(r *http.Request) bool {
	switch r.URL.Path {
	case "/healthz", "/readyz":
		return true
	}
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) && web.Has(r.URL.Path)
}

// readTokens reads a token file: one token per line; blank lines and lines
// starting with # are skipped. A token's identity is "token-N", N its line.
func readTokens(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tokens := make(map[string]string)
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		tok := strings.TrimSpace(sc.Text())
		if tok == "" || strings.HasPrefix(tok, "#") {
			continue
		}
		tokens[tok] = fmt.Sprintf("token-%d", n)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(tokens) == 0 {
		return nil, fmt.Errorf("%s holds no tokens", path)
	}
	return tokens, nil
}

func splitList(s string) []string {
	var out []string
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}
