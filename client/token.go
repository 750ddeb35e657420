package client

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/switchboard-rpc/switchboard/peer"
	"go.uber.org/zap"
)

// Tokens that expire (docs/security.md, "Identity and rules"): with Options.TokenFunc the
// client gets a token for each connection attempt and, before the token's
// exp (read from the JSON Web Token, not verified: the hub does that),
// gets a fresh one and sends it with rpc.auth, so that the hub does not
// close the connection with 4001.

// ErrTokenRefused wraps the error of a token refresh that failed: the
// token function's error, or the hub's refusal of the new token.
var ErrTokenRefused = errors.New("client: token refresh failed")

// maxRefreshMargin bounds how long before exp a token is refreshed: a
// quarter of its remaining life, at most this.
const maxRefreshMargin = 30 * time.Second

// minRefreshRetry is the shortest pause before a failed refresh is tried
// again (half the time left to exp, at least this).
const minRefreshRetry = 500 * time.Millisecond

// dialHeader returns the handshake header of a connection attempt, with a
// fresh token from TokenFunc, and that token's expiry (zero: none known).
func (c *Client) dialHeader(ctx context.Context) (http.Header, time.Time, error) {
	if c.o.TokenFunc == nil {
		return c.o.Header, time.Time{}, nil
	}
	tok, err := c.o.TokenFunc(ctx)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("token: %w", err)
	}
	return withToken(c.o.Header, tok), tokenExpiry(tok), nil
}

// tokenExpiry reads the exp claim of a JSON Web Token, without verifying
// it. Zero for a token that is no JWT or has no exp.
func tokenExpiry(tok string) time.Time {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return time.Time{}
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return time.Time{}
	}
	var claims struct {
		Exp *float64 `json:"exp"`
	}
	if json.Unmarshal(payload, &claims) != nil || claims.Exp == nil {
		return time.Time{}
	}
	return time.Unix(int64(*claims.Exp), 0)
}

// refreshAt returns when a token expiring at exp is to be replaced.
func refreshAt(exp time.Time) time.Duration {
	d := time.Until(exp)
	return d - min(d/4, maxRefreshMargin)
}

// tokenTimer keeps the refresh deadline of the connection run serves.
type tokenTimer struct {
	t   *time.Timer
	exp time.Time
}

// C returns the channel of the timer, nil when no refresh is due.
func (tt *tokenTimer) C() <-chan time.Time {
	if tt.t == nil {
		return nil
	}
	return tt.t.C
}

// arm schedules the refresh of a token expiring at exp (none for zero).
func (tt *tokenTimer) arm(exp time.Time) {
	tt.stop()
	tt.exp = exp
	if !exp.IsZero() {
		tt.t = time.NewTimer(refreshAt(exp))
	}
}

func (tt *tokenTimer) stop() {
	if tt.t != nil {
		tt.t.Stop()
		tt.t = nil
	}
}

// refresh gets a fresh token and sends it on pc with rpc.auth. A failure
// is reported to OnState (StateConnected with an error wrapping
// ErrTokenRefused) and tried again while the old token holds.
func (c *Client) refresh(pc *peer.Conn, tt *tokenTimer) {
	ctx, cancel := context.WithTimeout(c.ctx, c.o.DialTimeout)
	defer cancel()
	tok, err := c.o.TokenFunc(ctx)
	if err == nil {
		err = pc.Call(ctx, "rpc.auth", map[string]string{"token": tok}, nil)
	}
	if err == nil {
		tt.arm(tokenExpiry(tok))
		return
	}
	if c.ctx.Err() != nil || pc.Err() != nil {
		return // closed meanwhile: that is the news, and run reports it
	}
	err = fmt.Errorf("%w: %w", ErrTokenRefused, err)
	c.log.Warn("token refresh failed", zap.Error(err))
	c.setState(StateConnected, err)
	if left := time.Until(tt.exp); left > 0 {
		tt.t = time.NewTimer(max(left/2, minRefreshRetry))
	}
}

// tokenExp returns the expiry of the last connection's token.
func (c *Client) tokenExp() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.exp
}
