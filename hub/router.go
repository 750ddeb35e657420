package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/switchboard-rpc/switchboard/peer"
)

// Router returns a peer.Router that answers the hub's methods
// (rpc.subscribe, rpc.unsubscribe, rpc.publish, rpc.provide,
// rpc.unprovide), hands every other method to app (which may be nil), and
// forwards the methods app does not serve to the peers that provide them.
// rpc.discover is app's, with the provided methods added.
//
// The hub's methods run [peer.Inline], on the reader of the peer's connection: they take no in-flight slot, so a burst of
// rpc.publish notifications is never dropped, and a peer's subscribes,
// unsubscribes and publishes take effect in the order it sent them; a
// peer that subscribes and then publishes, without waiting in between,
// receives its own event. They are quick (fan-out never waits), but the
// Policy runs there too, so it must not block.
func (h *Hub) Router(app peer.Router) peer.Router {
	return router{h: h, app: app}
}

type router struct {
	h   *Hub
	app peer.Router
}

func (r router) Lookup(method string) (peer.Handler, peer.Mode) {
	switch method {
	case "rpc.subscribe":
		return r.h.handlers.subscribe, peer.Inline
	case "rpc.unsubscribe":
		return r.h.handlers.unsubscribe, peer.Inline
	case "rpc.publish":
		return r.h.handlers.publish, peer.Inline
	case "rpc.history":
		return r.h.handlers.history, peer.Concurrent
	case "rpc.presence":
		return r.h.handlers.presence, peer.Concurrent
	case "rpc.whoami":
		return whoamiHandler{r.h}, peer.Inline
	case "rpc.call":
		return addressHandler{r.h}, peer.Concurrent
	}
	return r.h.lookup(r.app, method) // the app's methods, then the provided ones
}

// topicsResult is the result of rpc.subscribe and rpc.unsubscribe.
type topicsResult struct {
	Topics []string `json:"topics"`
}

func (h *Hub) serveUnsubscribe(ctx context.Context, req *peer.Request) (any, error) {
	p, patterns, err := h.topicRequest(ctx, req)
	if err != nil {
		return nil, err
	}
	return topicsResult{h.unsubscribe(p, patterns)}, nil
}

// topicRequest returns the peer making an rpc.subscribe or
// rpc.unsubscribe request and the patterns it names.
func (h *Hub) topicRequest(ctx context.Context, req *peer.Request) (*Peer, []string, error) {
	p, err := h.caller(ctx, req.Method)
	if err != nil {
		return nil, nil, err
	}
	patterns, err := h.topicParams(req.Params)
	if err != nil {
		return nil, nil, err
	}
	return p, patterns, nil
}

// publishResult is the result of rpc.publish.
type publishResult struct {
	Delivered int    `json:"delivered"`
	Seq       uint64 `json:"seq"`
	Epoch     string `json:"epoch"`
}

func (h *Hub) servePublish(ctx context.Context, req *peer.Request) (any, error) {
	var p struct {
		Topic *string         `json:"topic"`
		Data  json.RawMessage `json:"data"`
	}
	var a []json.RawMessage
	switch form, err := readParams(req.Params, &p, &a); {
	case form == paramsByName && err != nil:
		return nil, invalidParams("rpc.publish takes {\"topic\": string, \"data\": any}")
	case form == paramsByPosition:
		if err != nil || len(a) < 1 || len(a) > 2 || json.Unmarshal(a[0], &p.Topic) != nil {
			return nil, invalidParams("rpc.publish takes [topic, data]")
		}
		if len(a) == 2 {
			p.Data = a[1]
		}
	}
	if p.Topic == nil {
		return nil, invalidParams("rpc.publish needs a topic")
	}
	topic := *p.Topic
	if err := h.checkTopic(topic, false); err != nil {
		return nil, err
	}
	if err := h.allow(ctx, Publish, topic); err != nil {
		return nil, err
	}
	data := []byte(p.Data)
	if len(data) == 0 {
		data = []byte("null")
	}
	n, at, err := h.publish(ctx, topic, data)
	if err != nil {
		return nil, err
	}
	return publishResult{n, at.Seq, at.Epoch}, nil
}

// caller returns the peer making a request, or an error when there is none
// (HTTP POST): topic subscriptions need a connection to deliver to.
func (h *Hub) caller(ctx context.Context, method string) (*Peer, error) {
	if p := h.PeerFromContext(ctx); p != nil {
		return p, nil
	}
	return nil, peer.Errorf(peer.CodeApplication, "%s needs a WebSocket connection to deliver events to", method)
}

// allow asks the policy, turning a refusal into -32001.
func (h *Hub) allow(ctx context.Context, a Action, topic string) error {
	err := h.o.Policy(ctx, a, topic)
	if err == nil {
		return nil
	}
	if e, ok := errors.AsType[*peer.Error](err); ok {
		return e
	}
	return peer.Errorf(peer.CodeUnauthorized, "Unauthorized: %s %s", a, quote(topic))
}

// topicParams reads the patterns of rpc.subscribe and rpc.unsubscribe:
// {"topic": t}, {"topics": [t, ...]} or [t, ...].
func (h *Hub) topicParams(params json.RawMessage) ([]string, error) {
	const usage = `takes {"topic": pattern} or [pattern, ...]`
	var topics []string
	var p struct {
		Topic  *string  `json:"topic"`
		Topics []string `json:"topics"`
	}
	form, err := readParams(params, &p, &topics)
	if err != nil {
		return nil, invalidParams(usage)
	}
	if form == paramsByName {
		if p.Topic != nil {
			topics = append(topics, *p.Topic)
		}
		topics = append(topics, p.Topics...)
	}
	if len(topics) == 0 {
		return nil, invalidParams("no topic: " + usage)
	}
	out := topics[:0]
	seen := make(map[string]bool, len(topics))
	for _, t := range topics {
		if err := h.checkTopic(t, true); err != nil {
			return nil, err
		}
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out, nil
}

// checkTopic returns the -32602 error for a topic (or, with wildcards, a
// pattern) a peer sent that is too long or malformed, and counts the too
// long.
func (h *Hub) checkTopic(t string, wildcards bool) *peer.Error {
	what := "topic to publish on"
	if wildcards {
		what = "topic pattern"
	}
	switch {
	case len(t) > h.o.MaxTopicLength:
		h.stats.overTopicLen.Add(1)
		return invalidParams(fmt.Sprintf("%s longer than %d bytes: %s", what, h.o.MaxTopicLength, quote(t)))
	case !validTopic(t, wildcards, h.o.MaxTopicLength):
		return invalidParams("invalid " + what + ": " + quote(t))
	}
	return nil
}

func invalidParams(msg string) *peer.Error {
	return peer.Errorf(peer.CodeInvalidParams, "Invalid params: %s", msg)
}

// quote quotes a topic for an error message, shortening a long one. The
// message is text, not HTML: ">" stays as it is.
func quote(s string) string {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return strconv.Quote(s)
}
