package mcp

import (
	"context"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/peer"
	"github.com/switchboard-rpc/switchboard/server"
	"go.uber.org/zap"
)

// Options configures a [Handler]. A nil *Options is valid: defaults for
// everything.
type Options struct {
	// Version is the server's version in initialize. Default: the
	// module's version in the build information, or "0.0.0".
	Version string

	// MaxInFlight caps the tool calls and resource reads one session runs
	// at once; beyond it, -32004. Default peer.DefaultMaxInFlight, as a
	// connection's calls are capped.
	MaxInFlight int

	// SessionTimeout closes a session that sends no request for that
	// long (a tool call running counts as a request). Default
	// [DefaultSessionTimeout]; negative: never.
	SessionTimeout time.Duration

	// MaxSessions caps the sessions open at once: beyond it, a request
	// that would open one gets 503. Default [DefaultMaxSessions].
	MaxSessions int

	// Logger receives a line per session at Debug. Nil discards them.
	Logger *zap.Logger
}

// The defaults of Options.SessionTimeout and Options.MaxSessions.
const (
	DefaultSessionTimeout = 30 * time.Minute
	DefaultMaxSessions    = 10000
)

// recomputeWait bounds the computing of the tool lists again after the
// provided methods changed, so that list_changed goes within 2 s: a
// provider that does not describe itself by then is listed as
// undescribed.
const recomputeWait = 1500 * time.Millisecond

// Handler is an http.Handler serving MCP's Streamable HTTP transport. Give
// it to [server.Server.Handle], which authenticates its requests. Its
// methods are safe for concurrent use; Shutdown must be called to end the
// sessions and the goroutines it runs.
type Handler struct {
	srv     *server.Server
	hub     *hub.Hub
	o       Options
	log     *zap.Logger
	mcp     *sdk.Server
	sdkHTTP http.Handler // the SDK's handler
	http    http.Handler // sdkHTTP behind the token's user check

	posts    sync.Map      // postKey header value -> the POST's context
	lastPost atomic.Uint64 // the latest POST's postKey value

	// Lock order: mu, then a session's mu, then callMu. mu is held
	// around the hub's Watch and its stop, which take the hub's publish
	// lock: what a watch calls takes none of these.

	// The calls running in all sessions, for Shutdown: once draining,
	// none is added.
	callMu   sync.Mutex
	draining bool
	running  sync.WaitGroup

	// The tools of the last rpc.discover document (tools.go): lastMu is
	// taken alone.
	lastMu    sync.Mutex
	lastDoc   []byte
	lastTools []*sdk.Tool

	mu       sync.Mutex
	sessions map[*sdk.ServerSession]*session
	topics   map[string]*watched // topics sessions subscribe to
	closing  bool
	wg       sync.WaitGroup // one per session, and followTools and notifyUpdated
	stop     chan struct{}  // closed by Shutdown: stops followTools and notifyUpdated
	dirty    chan struct{}  // 1-buffered: a watched topic has new events
	provided chan struct{}  // 1-buffered: the provided methods, or a session's grants, changed
	unwatch  func()         // the hub's WatchProvided, while sessions are open
}

// New returns a Handler serving the methods and topics of srv.
func New(srv *server.Server, opts *Options) *Handler {
	m := &Handler{srv: srv, hub: srv.Hub(), sessions: make(map[*sdk.ServerSession]*session),
		topics: make(map[string]*watched), stop: make(chan struct{}), dirty: make(chan struct{}, 1),
		provided: make(chan struct{}, 1)}
	if opts != nil {
		m.o = *opts
	}
	if m.o.Version == "" {
		m.o.Version = moduleVersion()
	}
	if m.o.MaxInFlight <= 0 {
		m.o.MaxInFlight = peer.DefaultMaxInFlight
	}
	if m.o.SessionTimeout == 0 {
		m.o.SessionTimeout = DefaultSessionTimeout
	}
	if m.o.MaxSessions <= 0 {
		m.o.MaxSessions = DefaultMaxSessions
	}
	m.log = m.o.Logger
	if m.log == nil {
		m.log = zap.NewNop()
	}
	m.mcp = sdk.NewServer(&sdk.Implementation{Name: "switchboard", Version: m.o.Version}, &sdk.ServerOptions{
		Capabilities: &sdk.ServerCapabilities{
			Tools:     &sdk.ToolCapabilities{ListChanged: true},
			Resources: &sdk.ResourceCapabilities{Subscribe: true},
		},
		SubscribeHandler:   m.subscribe,
		UnsubscribeHandler: m.unsubscribe,
	})
	m.mcp.AddResourceTemplate(&sdk.ResourceTemplate{
		Name:        "topic",
		Title:       "A topic of the hub",
		Description: "The topic's history, oldest first: a JSON array of {seq, epoch, data}. Subscribe for notifications/resources/updated on each new event.",
		MIMEType:    "application/json",
		URITemplate: topicURI + "{topic}",
	}, m.readResource)
	m.mcp.AddReceivingMiddleware(m.middleware)
	m.mcp.AddSendingMiddleware(m.sending)
	timeout := m.o.SessionTimeout
	if timeout < 0 {
		timeout = 0
	}
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return m.mcp }, &sdk.StreamableHTTPOptions{
		SessionTimeout: timeout,
		// The server checks the Host header of every request itself
		// (Options.AllowedHosts, or the loopback names): the SDK's own
		// check would refuse hosts the operator allowed.
		DisableLocalhostProtection: true,
		MaxRequestBodyBytes:        -1, // the server read the body within its limit
	})
	m.sdkHTTP = h
	m.http = auth.RequireBearerToken(func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
		id := hub.Identity(ctx)
		return &auth.TokenInfo{UserID: userKey(id), Extra: map[string]any{identityExtra: id}}, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
	m.wg.Add(2)
	go m.followTools()
	go m.notifyUpdated()
	return m
}

// identityExtra is the key of the identity in auth.TokenInfo.Extra.
const identityExtra = "switchboard.identity"

// postKey is the header that tells a tool call which POST carries it, so
// that it ends when that POST's client goes away: without an event store,
// the SDK cannot resume the stream the answer would go to.
const postKey = "Switchboard-Mcp-Post"

// ServeHTTP serves one request of the Streamable HTTP transport: POST,
// GET (the server's stream), DELETE (the session's end).
func (m *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if origin := r.Header.Get("Origin"); origin != "" {
		// The server refused the origins it does not allow: this one may
		// read the answers, as at /rpc.
		w.Header().Set("Access-Control-Allow-Origin", origin)
		w.Header().Add("Vary", "Origin")
		w.Header().Set("Access-Control-Expose-Headers", "Mcp-Session-Id, Mcp-Protocol-Version")
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			w.Header().Set("Access-Control-Allow-Methods", "GET, POST, DELETE")
			w.Header().Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID")
			w.Header().Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	identity := hub.Identity(r.Context())
	r.Header.Del(postKey)
	switch r.Method {
	case http.MethodDelete:
		// The SDK's Close waits for the session's handlers: cancel
		// them first.
		m.endCalls(r.Header.Get("Mcp-Session-Id"), userKey(identity))
	case http.MethodPost:
		if r.Header.Get("Mcp-Session-Id") == "" && m.full() {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "too many MCP sessions", http.StatusServiceUnavailable)
			return
		}
		// The header is the server's own (a client's was deleted
		// above): a count names the POST.
		key := strconv.FormatUint(m.lastPost.Add(1), 36)
		r.Header.Set(postKey, key)
		m.posts.Store(key, r.Context())
		defer m.posts.Delete(key)
	}
	if identity == nil { // an anonymous caller, where the server lets them in
		m.sdkHTTP.ServeHTTP(w, r)
		return
	}
	if f := strings.Fields(r.Header.Get("Authorization")); len(f) != 2 || !strings.EqualFold(f[0], "bearer") {
		w.Header().Set("WWW-Authenticate", `Bearer realm="switchboard"`)
		http.Error(w, "MCP takes the token in the Authorization header", http.StatusUnauthorized)
		return
	}
	m.http.ServeHTTP(w, r)
}

// Shutdown ends every session: new calls are refused (the server refuses
// new requests too once its own Shutdown has begun), the calls running may
// finish until ctx ends, when they are cancelled, and then the sessions
// are closed, their streams with them. It returns ctx.Err() if ctx ended
// first.
func (m *Handler) Shutdown(ctx context.Context) error {
	m.mu.Lock()
	if !m.closing {
		m.closing = true
		close(m.stop)
	}
	m.mu.Unlock()
	m.callMu.Lock()
	m.draining = true
	m.callMu.Unlock()
	drained := make(chan struct{})
	go func() {
		m.running.Wait()
		close(drained)
	}()
	var err error
	select {
	case <-drained:
	case <-ctx.Done():
		err = ctx.Err()
		for _, s := range m.allSessions() {
			s.cancelCalls()
		}
		<-drained
	}
	var wg sync.WaitGroup
	for _, s := range m.allSessions() {
		wg.Go(func() { _ = s.ss.Close() })
	}
	wg.Wait()
	m.wg.Wait()
	return err
}

// full reports whether MaxSessions are open.
func (m *Handler) full() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.sessions) >= m.o.MaxSessions
}

func (m *Handler) allSessions() []*session {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*session, 0, len(m.sessions))
	for _, s := range m.sessions {
		out = append(out, s)
	}
	return out
}

// startCall counts a call in running, or reports false once draining.
func (m *Handler) startCall() bool {
	m.callMu.Lock()
	defer m.callMu.Unlock()
	if m.draining {
		return false
	}
	m.running.Add(1)
	return true
}

func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range append([]*debug.Module{&bi.Main}, bi.Deps...) {
			if d.Path == "github.com/switchboard-rpc/switchboard" && d.Version != "" && d.Version != "(devel)" {
				return strings.TrimPrefix(d.Version, "v")
			}
		}
	}
	return "0.0.0"
}
