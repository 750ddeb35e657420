package rules

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// Token is what a verified JSON Web Token says about a peer.
type Token struct {
	Subject string         // "sub": the peer's identity
	Expires time.Time      // "exp"; zero when the token has none
	Claims  map[string]any // every claim, for rules written "claim=value"
	Grants  *Grants        // the "switchboard" claim; nil when absent
}

// Identity is a peer known by a token, as the server stores it for a
// connection: its String is the token's subject, the user that presence,
// rpc.whoami and rpc.call addresses show. The token can be replaced on a
// live connection (rpc.auth) by one with the same subject. It is safe for
// concurrent use.
type Identity struct {
	sub string
	cur atomic.Pointer[Token]
}

// NewIdentity returns the identity of a peer that presented t.
func NewIdentity(t *Token) *Identity {
	id := &Identity{sub: t.Subject}
	id.cur.Store(t)
	return id
}

// String returns the subject of the identity's token.
func (id *Identity) String() string { return id.sub }

// Token returns the token that holds now.
func (id *Identity) Token() *Token { return id.cur.Load() }

// ErrOtherSubject is what Replace returns for a token of another subject.
var ErrOtherSubject = errors.New("rules: token of another subject")

// Replace makes t the identity's token from now on: its grants and expiry
// replace the old token's. A token of another subject is refused with
// ErrOtherSubject, and the old one still holds.
func (id *Identity) Replace(t *Token) error {
	if t.Subject != id.sub {
		return ErrOtherSubject
	}
	id.cur.Store(t)
	return nil
}

// Grants is the "switchboard" claim of a token (docs/security.md, "Identity and rules"):
// for each action, the patterns it may be done on. An absent entry grants
// nothing of its kind, except Call: absent, every method may be called.
type Grants struct {
	Subscribe []string  `json:"subscribe"` // rpc.subscribe, rpc.history, rpc.presence
	Publish   []string  `json:"publish"`
	Provide   []string  `json:"provide"`
	Call      *[]string `json:"call"`
	Address   []string  `json:"address"` // "peer.<id>", "user.<identity>", "topic.<topic>"
	Admin     []string  `json:"admin"`   // the admin API's methods: "admin.*", "admin.peers"
}

// ParseGrants reads a "switchboard" claim, checking its patterns.
func ParseGrants(raw json.RawMessage) (*Grants, error) {
	var g Grants
	if err := json.Unmarshal(raw, &g); err != nil {
		return nil, fmt.Errorf("switchboard claim: %w", err)
	}
	lists := [][]string{g.Subscribe, g.Publish, g.Provide, g.Address, g.Admin}
	if g.Call != nil {
		lists = append(lists, *g.Call)
	}
	for _, l := range lists {
		for _, p := range l {
			if err := checkPattern(p, false); err != nil {
				return nil, fmt.Errorf("switchboard claim: %w", err)
			}
		}
	}
	return &g, nil
}

// allow reports whether the grants let a peer do a on target.
func (g *Grants) allow(a action, target string) bool {
	var list []string
	switch a {
	case actSubscribe:
		list = g.Subscribe
	case actPublish:
		list = g.Publish
	case actProvide:
		list = g.Provide
	case actCall:
		if g.Call == nil {
			return true
		}
		list = *g.Call
	case actAddress:
		list = g.Address
	case actAdmin:
		list = g.Admin
	}
	for _, p := range list {
		if covers(p, target, "") {
			return true
		}
	}
	return false
}
