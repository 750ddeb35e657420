package server

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/switchboard-rpc/switchboard/hub/rules"
)

// Revoked tokens: admin.disconnect with "revoke" records, on every node
// of the cluster, that a user's tokens issued before then are refused
// (hub.Hub.Revoke) until the hub restarts. The server asks at each
// authentication (a WebSocket handshake, a POST, rpc.auth): a token whose
// "iat" is before that time is refused with 401 (-32001 for rpc.auth),
// and so is every identity of the user that says nothing of when it was
// issued (a token without "iat", a static token).

// revocable wraps the server's Authenticate and Reauthenticate so that
// they refuse revoked tokens. New calls it.
func (s *Server) revocable() {
	if auth := s.o.Authenticate; auth != nil {
		s.o.Authenticate = func(r *http.Request) (any, error) {
			id, err := auth(r)
			if err == nil {
				err = s.checkRevoked(id)
			}
			if err != nil {
				return nil, err
			}
			return id, nil
		}
	}
	if reauth := s.o.Reauthenticate; reauth != nil {
		s.o.Reauthenticate = func(ctx context.Context, token string) (*rules.Token, error) {
			t, err := reauth(ctx, token)
			if err == nil {
				err = s.checkRevoked(rules.NewIdentity(t))
			}
			if err != nil {
				return nil, err
			}
			return t, nil
		}
	}
}

// checkRevoked returns an error wrapping ErrUnauthorized when identity's
// user had its tokens revoked and identity's was issued before that.
func (s *Server) checkRevoked(identity any) error {
	var user string
	switch id := identity.(type) {
	case string:
		user = id
	case fmt.Stringer:
		user = id.String()
	default:
		return nil
	}
	before, ok := s.hub.RevokedBefore(user)
	if !ok {
		return nil
	}
	if id, ok := identity.(*rules.Identity); ok {
		if iat, ok := id.Token().IssuedAt(); ok && !iat.Before(before) {
			return nil
		}
	}
	return fmt.Errorf("%w: the tokens of this user issued before %s are revoked", ErrUnauthorized, before.UTC().Format(time.RFC3339))
}
