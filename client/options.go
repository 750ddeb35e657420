package client

import (
	"context"
	"crypto/tls"
	"net/http"
	"time"

	"github.com/switchboard-rpc/switchboard/peer"
	"go.uber.org/zap"
)

// Options configures a [Client] ([Dial]). A nil *Options is valid and
// gives the defaults; zero fields mean their defaults too. Dial copies the
// struct, so it may be reused.
type Options struct {
	// Router serves the calls the hub makes on this client, usually a
	// *peer.Mux. Nil serves none: such calls get -32601. rpc.event is
	// never looked up in it: the client delivers events to its
	// subscriptions itself.
	Router peer.Router

	// URLs are further hub URLs, other nodes of the same cluster, to
	// connect to when url of Dial does not answer and to move to when the
	// connection drops: each attempt goes to the URL after the last one
	// tried, in the order url, URLs[0], URLs[1], ... and round again, with
	// the backoff below between attempts. Subscriptions resume on the new
	// node from their positions: without loss when the nodes share their
	// event stream (the same epoch), and otherwise with an Event marked
	// Missed. Nil: url only.
	URLs []string

	// Token, if set, is sent as "Authorization: Bearer <Token>" with the
	// WebSocket handshake (and each reconnection).
	Token string

	// TokenFunc, if set, is called for a token before each connection
	// attempt, whose handshake carries it as Token would, and again before
	// the token expires: a JSON Web Token's exp is read (not verified),
	// and a quarter of its remaining life before it (at most 30 s before)
	// the new token is sent with rpc.auth, so that the hub does not close
	// the connection (4001). A refresh that fails, because TokenFunc
	// returned an error or the hub refused the token, is reported to
	// OnState as StateConnected with an error wrapping ErrTokenRefused,
	// and tried again while the old token holds. It takes precedence over
	// Token.
	TokenFunc func(ctx context.Context) (string, error)

	// Header holds extra HTTP headers for the handshake.
	Header http.Header

	// TLSConfig configures TLS for wss:// and https:// URLs. Nil uses the
	// system's roots. Ignored when HTTPClient is set.
	TLSConfig *tls.Config

	// HTTPClient carries the WebSocket handshake. Its transport must
	// support protocol upgrades (*http.Transport does).
	// Default: a client of its own, built from TLSConfig, whose idle
	// connections are closed by Close.
	HTTPClient *http.Client

	// DialTimeout bounds one connection attempt: TCP, TLS, the WebSocket
	// handshake and re-subscribing. Default 10s.
	DialTimeout time.Duration

	// CallTimeout bounds a call (including any wait for a reconnection)
	// whose context has no deadline, and also a call that a handler of
	// Options.Router makes back to the hub on its connection
	// ([peer.ConnFromContext]). Default [peer.DefaultCallTimeout];
	// negative means no bound.
	CallTimeout time.Duration

	// PingInterval is how often the client calls rpc.ping to check that
	// the hub still answers, and PingTimeout how long the answer may
	// take: unanswered, the connection is closed and the client
	// reconnects. Defaults [peer.DefaultPingInterval] and
	// [peer.DefaultPingTimeout], as on the server, so a hub that stops
	// answering is left within their sum; a negative PingInterval sends
	// none. The hub also pings the client, which answers by itself.
	PingInterval, PingTimeout time.Duration

	// MinBackoff is the pause before the first reconnection attempt; each
	// failed attempt doubles it, up to MaxBackoff. Every pause is drawn at
	// random between half and all of its nominal length (jitter), so that
	// many clients do not come back at the same instant. A pause after a
	// refusal with a Retry-After lasts at least that long. Defaults 100ms
	// and 10s.
	MinBackoff, MaxBackoff time.Duration

	// MaxAttempts caps the consecutive failed reconnection attempts; after
	// that the client closes itself, and Err reports why. Default 0: try
	// forever. Negative: never reconnect; the client closes as soon as its
	// connection drops.
	MaxAttempts int

	// FailFast makes calls made while the client is disconnected fail at
	// once with an error wrapping ErrDisconnected. By default they wait for
	// the reconnection, bounded by their context. [WithFailFast] chooses
	// per call.
	FailFast bool

	// OnState, if set, is called at each change of the connection's state,
	// with the error that caused it (nil for StateConnecting and
	// StateConnected, and for StateClosed after Close). It is also called
	// with StateConnected and an error wrapping ErrTokenRefused when a
	// token refresh fails (TokenFunc). Calls come one at a
	// time, in order, from a goroutine of the client's own, StateClosed
	// last (also when Dial fails). OnState may call the client, but not
	// its Close; while it runs, later changes wait to be reported.
	OnState func(s State, err error)

	// OnRevoked, if set, is called when the hub has ended subscriptions
	// or provided methods that the client's authorization no longer
	// allows (rpc.revoked: a refreshed token with narrower grants). By
	// then the client has ended those subscriptions (their Err wraps
	// ErrRevoked; they are not subscribed again after a reconnection)
	// and dropped those provisions. It is called on a goroutine of the
	// connection's, and may call the client.
	OnRevoked func(Revoked)

	// Conn holds the limits of the connection, with the meanings and
	// defaults of [peer.Options]: MaxMessage (a larger message closes the
	// connection with 1009, and the client reconnects), MaxInFlight (the
	// hub's calls this client serves at once), MaxQueue and MaxQueueBytes
	// (what waits to be written; callers wait for room), and the others.
	// The client sets Router, Logger and CallTimeout itself, from the
	// fields of Options of those names; Conn's are ignored.
	Conn peer.Options

	// EventBuffer caps the events waiting for one subscription's handler.
	// Default 1024. When it is full, further events for that subscription
	// are dropped (and logged at Warn) until the handler catches up; other
	// subscriptions are not affected.
	EventBuffer int

	// Logger receives diagnostics: connection losses and reconnections,
	// dropped events, failed re-subscriptions. Nil discards them.
	Logger *zap.Logger
}

const (
	defaultDialTimeout = 10 * time.Second
	defaultMinBackoff  = 100 * time.Millisecond
	defaultMaxBackoff  = 10 * time.Second
	defaultEventBuffer = 1024
)

// withDefaults returns a copy of o with every zero field set.
func (o *Options) withDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.DialTimeout <= 0 {
		c.DialTimeout = defaultDialTimeout
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = peer.DefaultCallTimeout
	}
	if c.PingInterval == 0 {
		c.PingInterval = peer.DefaultPingInterval
	}
	if c.PingTimeout <= 0 {
		c.PingTimeout = peer.DefaultPingTimeout
	}
	if c.MinBackoff <= 0 {
		c.MinBackoff = defaultMinBackoff
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = defaultMaxBackoff
	}
	c.MaxBackoff = max(c.MaxBackoff, c.MinBackoff)
	if c.Conn.MaxMessage <= 0 {
		c.Conn.MaxMessage = peer.DefaultMaxMessage
	}
	if c.EventBuffer <= 0 {
		c.EventBuffer = defaultEventBuffer
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	c.Header = withToken(c.Header, c.Token)
	return c
}

// withToken returns a copy of h (never nil) that carries token, if any,
// as a bearer token.
func withToken(h http.Header, token string) http.Header {
	h = h.Clone()
	if h == nil {
		h = http.Header{}
	}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	return h
}

// httpClient returns hc, or when it is nil a client of its own built
// from tlsConfig, and whether the caller owns it (and so closes its idle
// connections when done).
func httpClient(hc *http.Client, tlsConfig *tls.Config) (*http.Client, bool) {
	if hc != nil {
		return hc, false
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	if tlsConfig != nil {
		t.TLSClientConfig = tlsConfig.Clone()
	}
	return &http.Client{Transport: t}, true
}
