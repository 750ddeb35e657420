package rules

import (
	"context"
	"encoding/json"
	"math"
	"time"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/peer"
)

// The admin action: who may call the admin API's methods (admin.peers,
// admin.disconnect, ...) on the hub's main listener. Nobody by default;
// a rule grants it as any other action ({"allow": ["admin"], "to":
// ["admin.*"], "who": "role=ops"}), a token's grants with "admin":
// ["admin.*"]. Demo grants it to nobody. It is not a hub.Action: no
// hub.Policy decides it, so that a policy allowing everything (such as
// hub.AllowAll) does not open the admin API.

// AllowAdmin reports whether a peer with identity (as [Set.Allow] takes
// it) may call the admin method: its token's grants say so when it has
// any, else a rule with the admin action.
func (s *Set) AllowAdmin(identity any, method string) bool {
	return s.allow(identity, actAdmin, method)
}

// AuthorizeAdmin is AllowAdmin as server.Options.AuthorizeAdmin: nil, or
// -32001.
func (s *Set) AuthorizeAdmin(ctx context.Context, method string) error {
	if s.AllowAdmin(hub.Identity(ctx), method) {
		return nil
	}
	return peer.Errorf(peer.CodeUnauthorized, "Unauthorized: %s needs the admin grant", method)
}

// IssuedAt returns the token's "iat" claim, and false when it has none
// (or one that is not a number of seconds).
func (t *Token) IssuedAt() (time.Time, bool) {
	var sec float64
	switch v := t.Claims["iat"].(type) {
	case float64:
		sec = v
	case json.Number:
		f, err := v.Float64()
		if err != nil {
			return time.Time{}, false
		}
		sec = f
	case int64:
		sec = float64(v)
	default:
		return time.Time{}, false
	}
	if math.IsNaN(sec) || math.IsInf(sec, 0) {
		return time.Time{}, false
	}
	whole, frac := math.Modf(sec)
	return time.Unix(int64(whole), int64(frac*1e9)), true
}
