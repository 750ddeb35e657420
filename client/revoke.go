package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/switchboard-rpc/switchboard/peer"
	"go.uber.org/zap"
)

// This file takes in rpc.revoked: the hub ended subscriptions and
// provided methods that the client's authorization, narrowed by a
// refreshed token, no longer allows.

// ErrRevoked is wrapped by the Err of a subscription that the hub ended
// because the client's authorization no longer allows it.
var ErrRevoked = errors.New("client: revoked by the hub")

// Revoked is what the hub ended (rpc.revoked): the patterns of
// subscriptions and the provided methods that the client may no longer
// have, as they were subscribed and provided.
type Revoked struct {
	Topics  []string `json:"topics"`
	Methods []string `json:"methods"`
}

// onRevoked serves rpc.revoked: it ends the client's subscriptions to the
// topics and drops the provisions of the methods, then calls OnRevoked.
func (c *Client) onRevoked(_ context.Context, req *peer.Request) (any, error) {
	var r Revoked
	if err := json.Unmarshal(req.Params, &r); err != nil {
		return nil, peer.Errorf(peer.CodeInvalidParams, "rpc.revoked takes {\"topics\": [...], \"methods\": [...]}")
	}
	c.log.Warn("revoked by the hub", zap.Strings("topics", r.Topics), zap.Strings("methods", r.Methods))
	if len(r.Topics) > 0 {
		c.smu.Lock()
		for s := range c.subs {
			for _, t := range r.Topics {
				if s.pattern == t {
					delete(c.subs, s)
					s.end(fmt.Errorf("%w: subscription to %s", ErrRevoked, t))
				}
			}
		}
		c.smu.Unlock()
	}
	for _, m := range r.Methods {
		c.prov.revoke(m)
	}
	if c.o.OnRevoked != nil {
		c.o.OnRevoked(r)
	}
	return nil, nil
}

// revoke drops the provision of method: the hub no longer forwards its
// calls.
func (ps *provisions) revoke(method string) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if _, ok := ps.all[method]; ok {
		delete(ps.all, method)
		ps.publishLocked()
	}
}
