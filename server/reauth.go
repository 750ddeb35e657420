package server

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/hub/rules"
	"github.com/switchboard-rpc/switchboard/peer"
	"go.uber.org/zap"
)

// Tokens on a live connection (docs/security.md, "Identity and rules"): a WebSocket whose
// identity is a *rules.Identity with an expiry is closed with 4001 when
// it passes, unless rpc.auth has replaced the token first.

// CloseTokenExpired is the close code of a WebSocket whose token expired.
const CloseTokenExpired = 4001

// expiries holds the expiry timer of each connection with a token. Its
// mutex is taken alone, never with Server.mu.
type expiries struct {
	mu sync.Mutex
	m  map[*rules.Identity]*expiry
}

type expiry struct {
	conn  *peer.Conn
	timer *time.Timer // nil while the token has no exp
}

// watch closes conn with 4001 when id's token expires, until stop is
// called. A token replaced meanwhile moves the deadline (arm).
func (e *expiries) watch(conn *peer.Conn, id *rules.Identity) (stop func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.m == nil {
		e.m = make(map[*rules.Identity]*expiry)
	}
	x := &expiry{conn: conn}
	e.m[id] = x
	e.armLocked(id, x)
	return func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		if x.timer != nil {
			x.timer.Stop()
		}
		delete(e.m, id)
	}
}

// arm sets the deadline of id's connection to its token's expiry.
func (e *expiries) arm(id *rules.Identity) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x := e.m[id]; x != nil {
		e.armLocked(id, x)
	}
}

func (e *expiries) armLocked(id *rules.Identity, x *expiry) {
	exp := id.Token().Expires
	switch {
	case exp.IsZero():
		if x.timer != nil {
			x.timer.Stop()
		}
	case x.timer == nil:
		x.timer = time.AfterFunc(time.Until(exp), func() { expire(x.conn, id) })
	default:
		x.timer.Reset(time.Until(exp))
	}
}

// expire closes conn unless its token was replaced by a later one while
// the timer fired.
func expire(conn *peer.Conn, id *rules.Identity) {
	if exp := id.Token().Expires; exp.IsZero() || time.Now().Before(exp) {
		return // arm has moved the timer
	}
	_ = conn.CloseWith(CloseTokenExpired, "token expired")
}

// authResult is the result of rpc.auth.
type authResult struct {
	User    string `json:"user"`
	Expires *int64 `json:"expires"`
	// Revoked is what the new token no longer allows, which ended (the
	// rpc.revoked notification before this result said so too).
	Revoked *hub.Revoked `json:"revoked,omitempty"`
}

// serveAuth answers rpc.auth {"token": "<JWT>"}: the token must be valid
// and of the connection's subject; it then replaces the connection's
// token, its grants and its expiry. The peer's subscriptions and provided
// methods are then judged by the new grants: those no longer allowed end
// (hub.Peer.Reauthorize), and the peer is told with rpc.revoked.
func (s *Server) serveAuth(ctx context.Context, req *peer.Request) (any, error) {
	var p struct {
		Token string `json:"token"`
	}
	if json.Unmarshal(req.Params, &p) != nil || p.Token == "" {
		return nil, peer.Errorf(peer.CodeInvalidParams, `Invalid params: rpc.auth takes {"token": "<JWT>"}`)
	}
	if peer.ConnFromContext(ctx) == nil {
		return nil, peer.Errorf(peer.CodeApplication, "rpc.auth needs a WebSocket connection: over POST, send the token with each request")
	}
	id, ok := hub.Identity(ctx).(*rules.Identity)
	if !ok || s.o.Reauthenticate == nil {
		return nil, peer.Errorf(peer.CodeUnauthorized, "Unauthorized: this connection has no token to replace")
	}
	t, err := s.o.Reauthenticate(ctx, p.Token)
	if err != nil {
		s.audit.refused(auditAuth, "auth", s.whoOf(ctx), "rpc.auth", "", err)
		return nil, peer.Errorf(peer.CodeUnauthorized, "Unauthorized: %v", err)
	}
	if err := id.Replace(t); err != nil {
		s.audit.refused(auditAuth, "auth", s.whoOf(ctx), "rpc.auth", "", err, zap.String("subject", t.Subject))
		return nil, peer.Errorf(peer.CodeUnauthorized, "Unauthorized: the token is for another user")
	}
	s.expiries.arm(id)
	res := authResult{User: t.Subject}
	if !t.Expires.IsZero() {
		sec := t.Expires.Unix()
		res.Expires = &sec
	}
	if p := s.hub.PeerFromContext(ctx); p != nil {
		r, err := p.Reauthorize(ctx)
		if err != nil {
			return nil, err // the connection is closing
		}
		if !r.Empty() {
			res.Revoked = &r
		}
	}
	return res, nil
}

// authRouter serves rpc.auth before the hub's router.
type authRouter struct {
	s    *Server
	next peer.Router
}

func (a authRouter) Lookup(method string) (peer.Handler, peer.Mode) {
	if method == "rpc.auth" {
		return peer.HandlerFunc(a.s.serveAuth), peer.Concurrent
	}
	if h, mode := a.s.adminLookup(method, a.next); h != nil {
		return h, mode
	}
	return a.next.Lookup(method)
}
