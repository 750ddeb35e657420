package mcp

import (
	"context"
	"fmt"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/peer"
	"go.uber.org/zap"
)

// session is what the hub keeps of one MCP session beside the SDK.
type session struct {
	m    *Handler
	ss   *sdk.ServerSession
	user string // userKey of the identity that opened it

	mu       sync.Mutex
	identity any // the latest request's
	calls    map[*int]context.CancelFunc
	topics   map[string]bool // subscribed
	tools    string          // fingerprint of the tools it may list, "" before known
	expiry   *time.Timer     // ends it when its latest token expires (expiry.go)
}

// track returns the session of ss, registering it on its first request.
func (m *Handler) track(ss *sdk.ServerSession, identity any) *session {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[ss]
	if s != nil {
		s.mu.Lock()
		old := s.identity
		s.identity = identity
		s.armLocked()
		s.mu.Unlock()
		if !sameGrants(old, identity) {
			// What the session may list may have changed with its token.
			m.toolsMayChange()
		}
		return s
	}
	s = &session{m: m, ss: ss, user: userKey(identity), identity: identity,
		calls: make(map[*int]context.CancelFunc), topics: make(map[string]bool)}
	if m.closing {
		return s // not kept: the server refuses requests once shutting down
	}
	s.mu.Lock()
	s.armLocked()
	s.mu.Unlock()
	if len(m.sessions) == 0 {
		// Follow the provided methods while sessions are open only.
		m.unwatch = m.hub.WatchProvided(m.toolsMayChange)
	}
	m.sessions[ss] = s
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		_ = ss.Wait()
		m.forget(s)
	}()
	m.log.Debug("mcp session", zap.String("session", ss.ID()), zap.String("user", s.user))
	return s
}

// forget drops a session that ended: its calls are cancelled, its topics
// unwatched.
func (m *Handler) forget(s *session) {
	s.cancelCalls()
	s.stopExpiry()
	m.mu.Lock()
	delete(m.sessions, s.ss)
	if len(m.sessions) == 0 && m.unwatch != nil {
		m.unwatch()
		m.unwatch = nil
	}
	s.mu.Lock()
	topics := s.topics
	s.topics = nil
	s.mu.Unlock()
	for t := range topics {
		m.unwatchLocked(t)
	}
	m.mu.Unlock()
	m.log.Debug("mcp session ended", zap.String("session", s.ss.ID()))
}

// endCalls cancels the calls of the session with id, when user may end it
// (as the SDK decides: the same user as the one that opened it, if any).
func (m *Handler) endCalls(id, user string) {
	if id == "" {
		return
	}
	m.mu.Lock()
	var found *session
	for ss, s := range m.sessions {
		if ss.ID() == id {
			found = s
			break
		}
	}
	m.mu.Unlock()
	if found != nil && (found.user == "" || found.user == user) {
		found.cancelCalls()
	}
}

// Why begin refuses a call.
var (
	errBusy  = &peer.Error{Code: peer.CodeOverloaded, Message: "Overloaded: too many calls in flight"}
	errEnded = &peer.Error{Code: peer.CodeShuttingDown, Message: "Session ended"}
	errDrain = &peer.Error{Code: peer.CodeShuttingDown, Message: "Shutting down"}
)

// begin registers a call of s, or refuses it: errBusy when max are
// running, errEnded once the session has ended, errDrain once the
// Handler shuts down.
func (s *session) begin(cancel context.CancelFunc, max int) (end func(), err *peer.Error) {
	key := new(int)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.calls == nil:
		return nil, errEnded
	case len(s.calls) >= max:
		return nil, errBusy
	case !s.m.startCall():
		return nil, errDrain
	}
	s.calls[key] = cancel
	return func() {
		s.mu.Lock()
		delete(s.calls, key)
		s.mu.Unlock()
		s.m.running.Done()
	}, nil
}

// cancelCalls cancels every call of s, now and later.
func (s *session) cancelCalls() {
	s.mu.Lock()
	calls := s.calls
	s.calls = nil
	s.mu.Unlock()
	for _, cancel := range calls {
		cancel()
	}
}

func (s *session) currentIdentity() any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.identity
}

// identityOf returns the identity of the request that extra comes with.
func identityOf(extra *sdk.RequestExtra) any {
	if extra == nil || extra.TokenInfo == nil {
		return nil
	}
	return extra.TokenInfo.Extra[identityExtra]
}

// userKey names the user of an identity, for the SDK's check that a
// session is used by the user that opened it: a JWT's subject, a static
// token's name. "" (anonymous) is not checked.
func userKey(identity any) string {
	switch id := identity.(type) {
	case nil:
		return ""
	case string:
		return id
	case fmt.Stringer:
		return id.String()
	}
	return fmt.Sprintf("%T %v", identity, identity)
}

// withIdentity is the context of a request of s.
func withIdentity(ctx context.Context, extra *sdk.RequestExtra) context.Context {
	return hub.WithIdentity(ctx, identityOf(extra))
}
