package client

import (
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/switchboard-rpc/switchboard/peer"
	"go.uber.org/zap"
)

// This file takes in rpc.missed: in a cluster of hubs, the hub lost
// events from another node, published on topics some subscriptions match.
// The client resumes those subscriptions from their positions on the same
// connection (rpc.subscribe with "since"), as it would after a
// reconnection: the hub replays what it holds and says it is not
// everything, so their handlers get an Event with Missed set, then the
// events that follow, none twice.

// onMissed serves rpc.missed on the reader goroutine, in order with the
// events: the subscriptions named hold their events from now until the
// hub has answered their resumption, made on a goroutine.
func (c *Client) onMissed(_ context.Context, req *peer.Request) (any, error) {
	var p struct {
		Topics []string `json:"topics"`
	}
	if err := json.Unmarshal(req.Params, &p); err != nil {
		c.log.Debug("malformed rpc.missed dropped", zap.ByteString("params", req.Params))
		return nil, peer.Errorf(peer.CodeInvalidParams, "rpc.missed needs topics")
	}
	c.smu.Lock()
	subs := make(map[*Subscription]struct{})
	for s := range c.subs {
		// One not started yet is resuming already, or starting from now.
		if s.known && slices.Contains(p.Topics, s.pattern) {
			subs[s] = struct{}{}
		}
	}
	params := resubscribeParams(subs)
	c.smu.Unlock()
	if len(params) == 0 {
		return nil, nil
	}
	c.log.Info("cluster events missed: resuming subscriptions", zap.Strings("topics", p.Topics))
	c.wg.Go(func() { c.resume(subs, params) })
	return nil, nil
}

// resume subscribes again to the patterns of params, each from its
// position, and starts subs with the answers. A transport error leaves
// them to the reconnection, which subscribes them again; a refusal starts
// them with the loss reported, as what they hold is all they get.
func (c *Client) resume(subs map[*Subscription]struct{}, params []subscribeParams) {
	c.hubMu.Lock()
	defer c.hubMu.Unlock()
	for _, p := range params {
		ctx, cancel := context.WithTimeout(c.ctx, c.o.DialTimeout)
		var res subscribeResult
		err := c.Call(WithFailFast(ctx, true), "rpc.subscribe", p, &res)
		cancel()
		if _, refused := errors.AsType[*peer.Error](err); err != nil && !refused {
			c.log.Warn("resuming a subscription after missed events failed; the reconnection resumes it",
				zap.String("topic", p.Topic), zap.Error(err))
			continue
		}
		if err != nil {
			c.log.Warn("resuming a subscription after missed events refused", zap.String("topic", p.Topic), zap.Error(err))
			f := false
			res = subscribeResult{Recovered: &f}
			if p.Since != nil {
				res.Epoch, res.Seq = p.Since.Epoch, p.Since.Seq
			}
		}
		c.smu.Lock()
		for s := range subs {
			if _, ok := c.subs[s]; ok && s.pattern == p.Topic {
				var since Position
				if p.Since != nil {
					since = s.pos
				}
				s.start(res, since, c.log)
			}
		}
		c.smu.Unlock()
	}
}
