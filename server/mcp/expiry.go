package mcp

import (
	"context"
	"reflect"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/hub/rules"
	"go.uber.org/zap"
)

// This file holds what a session's token decides after the request that
// brought it: the session ends when the token of its latest request
// expires, as a WebSocket closes with 4001; a topic the latest token no
// longer lets it subscribe to sends it nothing more; and a token with
// other grants has the tools it may list worked out again.

// expiryOf returns when identity's token expires; zero for none.
func expiryOf(identity any) time.Time {
	if id, ok := identity.(*rules.Identity); ok {
		if t := id.Token(); t != nil {
			return t.Expires
		}
	}
	return time.Time{}
}

// sameGrants reports whether identities a and b, of two requests of one
// session, give the same access: the same subject with the same grants.
func sameGrants(a, b any) bool {
	x, ok1 := a.(*rules.Identity)
	y, ok2 := b.(*rules.Identity)
	if !ok1 || !ok2 {
		return a == b
	}
	tx, ty := x.Token(), y.Token()
	return x == y || tx != nil && ty != nil && tx.Subject == ty.Subject && reflect.DeepEqual(tx.Grants, ty.Grants)
}

// armLocked sets the session's end to its token's expiry, if it has one.
// s.mu is held.
func (s *session) armLocked() {
	exp := expiryOf(s.identity)
	switch {
	case exp.IsZero() || s.calls == nil:
		if s.expiry != nil {
			s.expiry.Stop()
		}
	case s.expiry == nil:
		s.expiry = time.AfterFunc(time.Until(exp), s.expire)
	default:
		s.expiry.Reset(time.Until(exp))
	}
}

// expire ends the session unless a request with a later token moved its
// end while the timer fired: its calls are cancelled, its streams closed.
func (s *session) expire() {
	s.mu.Lock()
	exp := expiryOf(s.identity)
	s.mu.Unlock()
	if exp.IsZero() || time.Now().Before(exp) {
		return
	}
	s.m.log.Debug("mcp session's token expired", zap.String("session", s.ss.ID()))
	s.cancelCalls()
	_ = s.ss.Close()
}

// stopExpiry stops the timer of a session that ended.
func (s *session) stopExpiry() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.expiry != nil {
		s.expiry.Stop()
	}
}

// sending checks each notifications/resources/updated the SDK sends to a
// session: the session's latest token must still let it subscribe to the
// topic, or its subscription ends (no MCP message tells a client so; it
// may subscribe again, and is told why not).
func (m *Handler) sending(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if method != "notifications/resources/updated" {
			return next(ctx, method, req)
		}
		p, ok := req.GetParams().(*sdk.ResourceUpdatedNotificationParams)
		ss, ok2 := req.GetSession().(*sdk.ServerSession)
		if !ok || !ok2 {
			return next(ctx, method, req)
		}
		topic, err := m.topicOf(p.URI)
		if err != nil {
			return next(ctx, method, req)
		}
		m.mu.Lock()
		s := m.sessions[ss]
		m.mu.Unlock()
		if s == nil {
			return nil, nil // ended
		}
		s.mu.Lock()
		subscribed, identity := s.topics[topic], s.identity
		s.mu.Unlock()
		if !subscribed {
			return nil, nil // ended by an earlier notification
		}
		if m.hub.Allow(hub.WithIdentity(ctx, identity), hub.Subscribe, topic) != nil {
			m.log.Debug("mcp subscription ended: no longer allowed", zap.String("session", ss.ID()), zap.String("topic", topic))
			m.mu.Lock()
			s.mu.Lock()
			had := s.topics[topic]
			delete(s.topics, topic)
			s.mu.Unlock()
			if had {
				m.unwatchLocked(topic)
			}
			m.mu.Unlock()
			return nil, nil
		}
		return next(ctx, method, req)
	}
}
