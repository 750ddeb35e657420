package server

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/hub/rules"
	"github.com/switchboard-rpc/switchboard/internal/turns"
	"github.com/switchboard-rpc/switchboard/peer"
	"go.uber.org/zap"
)

// Options configures a Server. A nil *Options is valid: a default hub, no
// application methods, no authentication, same-origin WebSockets only.
// Zero fields mean their defaults.
type Options struct {
	// Router serves the application's methods. Nil serves none (the
	// system methods still work).
	Router peer.Router

	// Hub holds the connected peers and their topic subscriptions.
	// Nil means hub.New(nil): any peer may subscribe, none may publish.
	Hub *hub.Hub

	// Authenticate, if set, runs on every /rpc request, before a WebSocket
	// upgrade and before a POST body is read. It returns the caller's
	// identity, which handlers and the hub's policy see through
	// hub.Identity(ctx). An error refuses the request: 403 if it wraps
	// ErrForbidden, 401 otherwise (a POST also gets a -32001 error body).
	// BearerToken reads the token a client sent; TokenAuth checks it
	// against a fixed set.
	Authenticate func(r *http.Request) (identity any, err error)

	// HandshakeTimeout bounds a WebSocket handshake from the end of its
	// headers to the 101 response: Authenticate's request has a context
	// with that deadline, and writing the response must not take longer.
	// Default [DefaultHandshakeTimeout]. (Reading the headers is bounded by
	// the http.Server's ReadHeaderTimeout.)
	HandshakeTimeout time.Duration

	// Authorize, if set, is asked before each call or notification of a
	// method of Router (rpc.discover included), with the request's context
	// (hub.Identity gives the caller) and the method. An error refuses it
	// with -32001, or with the code of a *peer.Error. The topic methods
	// are decided by the hub's Policy instead.
	// For a handler marked peer.Inline it runs on the reader: it must not block.
	Authorize func(ctx context.Context, method string) error

	// Reauthenticate, if set, verifies the token a WebSocket peer sends
	// with rpc.auth (docs/security.md, "Identity and rules"): one of the connection's
	// subject replaces its token, grants and expiry. A connection whose
	// identity is a *rules.Identity (as [JWT.Authenticate] gives) is closed
	// with 4001 "token expired" when its token's expiry passes. Usually
	// [JWT.Verify].
	Reauthenticate func(ctx context.Context, token string) (*rules.Token, error)

	// AllowedOrigins lists the origins, beyond the request's own host,
	// that may open a WebSocket or POST from a browser, as host patterns
	// ("example.com", "*.example.com") or, with a scheme, origin patterns
	// ("https://*.example.com"), matched with path.Match against the
	// origin's host and port: a pattern without a port matches only an
	// origin without one (the scheme's default port); "example.com:8443"
	// matches that port, "example.com:*" any port. Requests without an
	// Origin header (non-browser clients) are not checked. Default: same
	// origin only. "*" allows any origin.
	AllowedOrigins []string

	// AllowedHosts lists the host names the Host header may carry, as
	// path.Match patterns ("*.example.com"), IP addresses and CIDRs
	// ("10.0.0.0/8": a Host that is an IP address in it). Empty means any
	// host, except on a loopback listener, where only "localhost", names
	// under ".localhost" and IP addresses are allowed: that stops DNS
	// rebinding attacks on a hub running on a developer's machine. A
	// refused host gets 403. The health probes (/healthz, /readyz) pass
	// whatever their Host: they tell nothing else, and probes address a
	// server by its IP.
	AllowedHosts []string

	// TrustedProxies lists the networks of the reverse proxies in front
	// of the server. A request from one of them is taken to come from the
	// client its X-Forwarded-For or Forwarded header names (the last
	// address there that is not a trusted proxy): the logs show that
	// address, and MaxConnsPerAddr caps the WebSockets of each client.
	// Nil: the headers are ignored, as anyone can write them.
	TrustedProxies []netip.Prefix

	// MaxConnsPerAddr caps the WebSockets open at once from one client
	// that comes through a trusted proxy (one IPv4 address or IPv6 /64);
	// beyond it, 503. The [Listener] caps the others by their own address
	// (and leaves trusted proxies to this cap). 0: no cap.
	MaxConnsPerAddr int

	// Conn holds the limits of each WebSocket connection, with the
	// meanings and defaults of [peer.Options]: MaxMessage, also of each
	// POST body (over it a WebSocket closes with 1009, a POST gets 413),
	// MaxBatch and MaxDepth, also of each POST, MaxInFlight (calls served
	// at once: the server reads on when one ends), MaxQueue and
	// MaxQueueBytes (what waits to be written: beyond them the server
	// takes no new call from that peer, and a peer too slow for its events
	// is closed with 1008), WriteStall (then 1008), and Rate and Burst
	// (the requests a peer may send per second: over it, -32004; none by
	// default). The server sets Router, Logger, QueueBudget, Share,
	// OnServe and OnLimit itself, from its own fields: Conn's are ignored.
	Conn peer.Options

	// BodyTimeout bounds reading one POST body, counted from the end of
	// its headers. Default [DefaultBodyTimeout]; a body still arriving then
	// gets 408 and its connection is closed. It does not apply to
	// WebSockets.
	BodyTimeout time.Duration

	// QueueBudget caps what waits to be written to all WebSocket peers
	// together, in bytes (see [peer.Budget]): beyond it, each peer with
	// anything of its own waiting takes no new call until that moves.
	// Default [DefaultQueueBudget]; negative: no cap (Stats still counts).
	QueueBudget int64

	// BusyReaders caps how many busy WebSocket connections are read at
	// once: those whose next message is always already there, such as a
	// client keeping hundreds of calls in flight. The others wait their
	// turn, message by message, so that busy connections cannot keep
	// every core busy and delay every other connection's calls (see
	// docs/peer.md, "Busy connections share the processor"). Default 0: one less than the processors Go uses
	// (GOMAXPROCS), at least one; negative: no cap.
	BusyReaders int

	// PingInterval is how often the server sends each WebSocket peer a
	// ping, and PingTimeout how long the pong may take: a peer that sends
	// nothing at all for that long (no pong, no message) is closed with
	// 1001 "ping timeout", which drops its subscriptions and cancels its
	// handlers. Defaults [peer.DefaultPingInterval] and
	// [peer.DefaultPingTimeout], so a peer that stops answering is closed
	// within twice the interval and the timeout (90 s): a peer that showed
	// signs of life since the last ping is not pinged (see
	// [peer.Conn.PingIdle]). A negative PingInterval sends none.
	// Browsers answer pings by themselves.
	PingInterval, PingTimeout time.Duration

	// OnServe, if set, is called after each request served, WebSocket or
	// POST, with the method ("" when there is no such method), the error
	// code sent back (0 for a result) and the time the handler took, as
	// peer.Options.OnServe is. It runs on the handler's goroutine and must
	// be fast. Metrics hook here: see server/prom.
	OnServe func(method string, code peer.Code, elapsed time.Duration)

	// Root, if set, serves the requests the server does not: a plain GET
	// or HEAD of "/" (without a WebSocket upgrade), where cmd/hub shows the
	// playground, and every path other than /rpc and /healthz.
	// A POST or a WebSocket upgrade at "/" is JSON-RPC exactly as at /rpc,
	// whatever Root is, so that clients written for a server at the root
	// work. Nil: other paths get 404, and a plain GET of "/" gets the
	// explanation /rpc gives.
	Root http.Handler

	// Compression enables permessage-deflate on WebSockets. Off by
	// default: it costs CPU and memory per connection, and JSON-RPC
	// messages are usually small.
	Compression bool

	// Logger receives one line per connection and per refusal, and
	// diagnostics at Debug. Nil discards them.
	Logger *zap.Logger

	// Audit logs the refusals: of authentication at Info, of the rules
	// and the limits at Debug, rate-limited (see [Audit]). Nil: one of
	// the server's own, to Logger.
	Audit *Audit

	// AuthorizeAdmin, if set, decides who may call the admin API
	// (admin.peers, admin.disconnect, ...; see [AdminMethods]) on this
	// endpoint, with the request's context and the method: nil allows,
	// an error refuses with -32001 (or the code of a *peer.Error). Nil:
	// nobody may here; AdminHandler serves it to operators.
	// rules.Set.AuthorizeAdmin suits it.
	AuthorizeAdmin func(ctx context.Context, method string) error

	// Ready, if set, tells /readyz whether the hub can serve beyond being
	// alive: an error (a cluster node's NATS link down, its stream not
	// read yet) makes /readyz answer 503 with the error's text. /readyz
	// also answers 503 while the server shuts down. Nil: ready while not
	// shutting down. [JWT.Ready] fits: not ready until a JWKS URL's keys
	// are loaded.
	Ready func() error

	// Version, if set, follows "ok" in /healthz's body ("ok v1.2.0"), so
	// that a probe or a person can tell which build answers.
	Version string
}

// ErrForbidden, wrapped in an error from Options.Authenticate, answers 403
// (the caller is known but not allowed) rather than 401.
var ErrForbidden = errors.New("server: forbidden")

// ErrUnauthorized is what TokenAuth returns for a missing or unknown token.
var ErrUnauthorized = errors.New("server: unauthorized")

// DefaultBodyTimeout is the default of Options.BodyTimeout.
const DefaultBodyTimeout = 10 * time.Second

// DefaultQueueBudget is the default of Options.QueueBudget.
const DefaultQueueBudget = 256 << 20

// Server is an http.Handler serving JSON-RPC 2.0 on /rpc and / (WebSocket
// and HTTP POST), /healthz, and what Options.Root serves. Each WebSocket is
// served on the goroutine of its HTTP request, as a peer of the server's Hub.
//
// Mount it on a mux for those paths, or use it as the whole handler.
// Call Shutdown to close WebSockets: http.Server.Shutdown does not touch
// them. All methods are safe for concurrent use.
type Server struct {
	o        Options
	hub      *hub.Hub
	router   peer.Router
	log      *zap.Logger
	mux      *http.ServeMux
	counters counters
	share    *turns.Share // BusyReaders; nil: no cap
	budget   *peer.Budget // QueueBudget
	proxies  proxies
	expiries expiries // of the connections with a token
	handled  sync.Map // the paths given to Handle
	audit    *Audit

	adminInit sync.Once
	admin     *adminState // the admin methods (admin.go)

	mu       sync.Mutex
	closing  bool
	conns    map[*peer.Conn]bool // WebSockets served, and whether a ping waits for its pong
	pingStop chan struct{}       // closes the pinger; nil while none runs
	active   int                 // WebSockets and POSTs being served
	idle     chan struct{}       // closed once closing and nothing is active
}

// New returns a Server configured by opts.
func New(opts *Options) *Server {
	s := &Server{conns: make(map[*peer.Conn]bool), idle: make(chan struct{})}
	if opts != nil {
		s.o = *opts
	}
	if s.o.Hub == nil {
		s.o.Hub = hub.New(nil)
	}
	if s.o.Conn.MaxMessage <= 0 {
		s.o.Conn.MaxMessage = peer.DefaultMaxMessage
	}
	if s.o.BodyTimeout <= 0 {
		s.o.BodyTimeout = DefaultBodyTimeout
	}
	if s.o.PingInterval == 0 {
		s.o.PingInterval = peer.DefaultPingInterval
	}
	if s.o.PingTimeout <= 0 {
		s.o.PingTimeout = peer.DefaultPingTimeout
	}
	if s.o.Logger == nil {
		s.o.Logger = zap.NewNop()
	}
	if s.o.BusyReaders >= 0 {
		s.share = turns.New(s.o.BusyReaders)
	}
	if s.o.QueueBudget == 0 {
		s.o.QueueBudget = DefaultQueueBudget
	}
	s.budget = peer.NewBudget(s.o.QueueBudget)
	s.proxies = proxies{trusted: s.o.TrustedProxies, max: s.o.MaxConnsPerAddr}
	s.hub = s.o.Hub
	s.log = s.o.Logger
	if s.audit = s.o.Audit; s.audit == nil {
		s.audit = NewAudit(s.log)
	}
	s.hub.SetRefusals(s.audit)
	s.revocable()
	app := s.o.Router
	if app != nil && s.o.Authorize != nil {
		app = authorizer{app, s.o.Authorize, s}
	}
	s.router = authRouter{s, s.hub.Router(app)}
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("/rpc", s.serveRPC)
	s.mux.HandleFunc("/", s.serveRoot)
	s.mux.HandleFunc("/healthz", s.serveHealth)
	s.mux.HandleFunc("/readyz", s.serveReady)
	return s
}

// Hub returns the server's hub.
func (s *Server) Hub() *hub.Hub { return s.hub }

// ServeHTTP serves /rpc, /, /healthz and /readyz; other paths go to Options.Root,
// or get 404.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.proxies.clientOf(r) {
		r = r.WithContext(context.WithValue(r.Context(), proxiedKey{}, true))
	}
	if !s.hostAllowed(r) {
		s.refuse(w, r, http.StatusForbidden, refusedHost, "host not allowed")
		return
	}
	s.mux.ServeHTTP(w, r)
}

func (s *Server) serveRPC(w http.ResponseWriter, r *http.Request) {
	if !s.originAllowed(r) {
		s.refuse(w, r, http.StatusForbidden, refusedOrigin, "origin not allowed")
		return
	}
	// A page of an allowed origin may read the answers, a refusal's status
	// too: that is how its client learns why a handshake failed (browsers
	// hide it), with a POST that needs a CORS preflight.
	if origin := r.Header.Get("Origin"); origin != "" {
		w.Header().Set("Access-Control-Allow-Origin", origin)
		w.Header().Add("Vary", "Origin")
	}
	switch {
	case r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "":
		w.Header().Set("Access-Control-Allow-Methods", "POST")
		w.Header().Set("Access-Control-Allow-Headers", "Authorization, Content-Type")
		w.Header().Set("Access-Control-Max-Age", "600")
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodPost:
		s.servePost(w, r)
	case r.Method == http.MethodGet && isUpgrade(r):
		s.serveWebSocket(w, r)
	case r.Method == http.MethodGet:
		w.Header().Set("Upgrade", "websocket")
		w.Header().Set("Connection", "Upgrade")
		plain(w, http.StatusUpgradeRequired,
			r.URL.Path+" speaks JSON-RPC 2.0 over a WebSocket (GET with Upgrade: websocket) or over HTTP POST with Content-Type: application/json\n")
	default:
		w.Header().Set("Allow", "GET, POST")
		plain(w, http.StatusMethodNotAllowed, "method not allowed: use POST, or GET to open a WebSocket\n")
	}
}

// serveRoot serves "/" as /rpc, but for plain GETs, and Options.Root.
func (s *Server) serveRoot(w http.ResponseWriter, r *http.Request) {
	plainGet := (r.Method == http.MethodGet || r.Method == http.MethodHead) && !isUpgrade(r)
	switch {
	case r.URL.Path == "/" && !plainGet:
		s.serveRPC(w, r)
	case s.o.Root != nil:
		s.o.Root.ServeHTTP(w, r)
	case r.URL.Path == "/":
		s.serveRPC(w, r)
	default:
		http.NotFound(w, r)
	}
}

// begin registers a request being served, or reports false when the
// server is shutting down. Each true is paired with a call to end.
func (s *Server) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.active++
	return true
}

// end unregisters a request begin registered.
func (s *Server) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.active--
	s.checkIdleLocked()
}

// checkIdleLocked closes s.idle once the server is closing and serves
// nothing.
func (s *Server) checkIdleLocked() {
	if s.closing && s.active == 0 {
		select {
		case <-s.idle:
		default:
			close(s.idle)
		}
	}
}

func (s *Server) isClosing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closing
}

// peerOptions returns the options for one connection or POST, from w.
func (s *Server) peerOptions(log *zap.Logger, w who) *peer.Options {
	o := s.o.Conn
	o.Router = s.router
	o.QueueBudget = s.budget
	o.Logger = log
	o.OnServe = s.o.OnServe
	o.OnLimit = s.onLimit(w)
	o.Share = s.share
	return &o
}

// Shutdown stops the server gracefully: new WebSockets and POSTs are
// refused with 503, every WebSocket stops taking new calls, finishes the
// calls in flight and closes with 1001 (going away), and POSTs whose body
// has arrived are answered; it returns nil once all of that is done. When
// ctx ends first, the connections left are closed at once and Shutdown
// returns ctx.Err(). POST bodies still arriving are not waited for (they
// are refused with 503 once read, and BodyTimeout bounds them). Shutdown
// does not close listeners: call http.Server.Shutdown as well.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	s.checkIdleLocked()
	conns := make([]*peer.Conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()

	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(func() { _ = c.Shutdown(ctx) }) // closes c at once if ctx ends
	}
	wg.Wait()

	// Done in time even if ctx has ended meanwhile: nothing was cut short.
	select {
	case <-s.idle:
		return nil
	default:
	}
	select {
	case <-s.idle:
		return nil
	case <-ctx.Done():
		// Handlers that ignore their context keep their connection's
		// goroutine; the connections themselves are closed.
		return ctx.Err()
	}
}

// authorizer asks Options.Authorize before every method the app's router
// serves. The handler keeps its mode: for a peer.Inline method, Authorize
// runs on the connection's reader too.
type authorizer struct {
	next      peer.Router
	authorize func(ctx context.Context, method string) error
	s         *Server // audits the refusals
}

func (a authorizer) Lookup(method string) (peer.Handler, peer.Mode) {
	h, mode := a.next.Lookup(method)
	if h == nil {
		return nil, mode
	}
	return peer.HandlerFunc(func(ctx context.Context, req *peer.Request) (any, error) {
		if err := a.authorize(ctx, req.Method); err != nil {
			a.s.audit.HubRefused(ctx, hub.Refusal{Peer: a.s.hub.PeerFromContext(ctx), Action: hub.Call, Target: req.Method, Err: err})
			if e, ok := errors.AsType[*peer.Error](err); ok {
				return nil, e
			}
			return nil, peer.Errorf(peer.CodeUnauthorized, "Unauthorized: %s", req.Method)
		}
		return h.ServeRPC(ctx, req)
	}), mode
}

func plain(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(msg))
}

// refuse answers a request the server will not serve, counts and audits
// it.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, code int, reason refusal, msg string) {
	s.counters.refused[reason].Add(1)
	kind := auditLimit
	if reason == refusedAuth {
		kind = auditAuth
	}
	s.audit.request(kind, reason.String(), r, code, nil)
	if code == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", retryAfter)
	}
	plain(w, code, msg+"\n")
}
