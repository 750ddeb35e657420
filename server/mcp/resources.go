package mcp

import (
	"context"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/peer"
	"go.uber.org/zap"
)

// topicURI starts the URI of each topic's resource.
const topicURI = "switchboard://topic/"

// watched is a topic that sessions subscribe to.
type watched struct {
	sessions int         // subscribed; guarded by Handler.mu
	stop     func()      // the hub's Watch
	pending  atomic.Bool // an event came, not yet told
}

// topicOf returns the topic of a resource URI, or a JSON-RPC error.
func (m *Handler) topicOf(uri string) (string, error) {
	topic, ok := strings.CutPrefix(uri, topicURI)
	if !ok || topic == "" || strings.ContainsAny(topic, "*>") {
		return "", sdk.ResourceNotFoundError(uri)
	}
	return topic, nil
}

// readTopic answers resources/read of a topic: its history, oldest first.
func (m *Handler) readTopic(ctx context.Context, s *session, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	topic, err := m.topicOf(req.Params.URI)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Counted with the session's calls, so that its end cancels it, but
	// not capped: a read is brief and bounded by the message size limit,
	// and no JSON-RPC code would tell an SDK client "busy" (it takes
	// -32004 for "server is closing").
	end, refused := s.begin(cancel, math.MaxInt)
	if refused != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: refused.Message}
	}
	defer end()
	params, _ := json.Marshal(map[string]any{"topic": topic, "limit": hub.MaxHistoryLimit})
	res, err := m.call(ctx, "rpc.history", params)
	if err != nil {
		if e, ok := err.(*peer.Error); ok {
			return nil, &jsonrpc.Error{Code: int64(e.Code), Message: e.Message, Data: e.Data}
		}
		return nil, err
	}
	var h struct {
		Epoch  json.RawMessage `json:"epoch"`
		Events []struct {
			Seq  uint64          `json:"seq"`
			Data json.RawMessage `json:"data"`
		} `json:"events"`
	}
	if err := json.Unmarshal(res, &h); err != nil {
		return nil, err
	}
	text := make([]byte, 0, len(res))
	text = append(text, '[')
	for i, e := range h.Events {
		if i > 0 {
			text = append(text, ',')
		}
		text = append(text, `{"seq":`...)
		text = strconv.AppendUint(text, e.Seq, 10)
		text = append(text, `,"epoch":`...)
		text = append(text, h.Epoch...)
		text = append(text, `,"data":`...)
		text = append(text, e.Data...)
		text = append(text, '}')
	}
	text = append(text, ']')
	out := &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{
		{URI: req.Params.URI, MIMEType: "application/json", Text: string(text)},
	}}
	out.CacheScope = "private" // what the caller may read, now
	return out, nil
}

// readResource is the template's handler; readTopic answers every read
// first, so it only runs for a request without a session.
func (m *Handler) readResource(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	return nil, sdk.ResourceNotFoundError(req.Params.URI)
}

// subscribe lets a session subscribe to a topic it may subscribe to; the
// SDK then sends it notifications/resources/updated for the topic's URI.
func (m *Handler) subscribe(ctx context.Context, req *sdk.SubscribeRequest) error {
	topic, err := m.topicOf(req.Params.URI)
	if err != nil {
		return err
	}
	if req.Params.URI != topicURI+topic {
		return sdk.ResourceNotFoundError(req.Params.URI)
	}
	identity := identityOf(req.Extra)
	if err := m.hub.Allow(hub.WithIdentity(ctx, identity), hub.Subscribe, topic); err != nil {
		e, _ := err.(*peer.Error)
		if e == nil {
			e = &peer.Error{Code: peer.CodeUnauthorized, Message: "Unauthorized"}
		}
		return &jsonrpc.Error{Code: int64(e.Code), Message: e.Message, Data: e.Data}
	}
	s := m.track(req.Session, identity)
	m.mu.Lock()
	defer m.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.topics == nil || s.topics[topic] {
		return nil
	}
	w := m.topics[topic]
	if w == nil {
		w = &watched{}
		stop, err := m.hub.Watch(topic, func(uint64) { m.eventOn(w) })
		if err != nil {
			return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
		}
		w.stop = stop
		m.topics[topic] = w
	}
	w.sessions++
	s.topics[topic] = true
	return nil
}

// unsubscribe ends a session's subscription to a topic.
func (m *Handler) unsubscribe(ctx context.Context, req *sdk.UnsubscribeRequest) error {
	topic, err := m.topicOf(req.Params.URI)
	if err != nil {
		return nil
	}
	s := m.track(req.Session, identityOf(req.Extra))
	m.mu.Lock()
	defer m.mu.Unlock()
	s.mu.Lock()
	had := s.topics[topic]
	delete(s.topics, topic)
	s.mu.Unlock()
	if had {
		m.unwatchLocked(topic)
	}
	return nil
}

// unwatchLocked counts a session's subscription to topic out. m.mu is held.
func (m *Handler) unwatchLocked(topic string) {
	w := m.topics[topic]
	if w == nil {
		return
	}
	if w.sessions--; w.sessions <= 0 {
		w.stop()
		delete(m.topics, topic)
	}
}

// eventOn marks a watched topic as having news. It runs with the hub's
// publish lock held, which subscribe and unsubscribe take (through Watch
// and its stop) with m.mu held: it takes no lock, only marks and wakes
// notifyUpdated.
func (m *Handler) eventOn(w *watched) {
	w.pending.Store(true)
	select {
	case m.dirty <- struct{}{}:
	default:
	}
}

// notifyUpdated sends notifications/resources/updated for the topics with
// news, to the sessions subscribed to them. Events that come faster than
// the notifications go are told once: the notification says the resource
// changed, reading it gives every event.
func (m *Handler) notifyUpdated() {
	defer m.wg.Done()
	for {
		select {
		case <-m.stop:
			return
		case <-m.dirty:
		}
		m.mu.Lock()
		var topics []string
		for t, w := range m.topics {
			if w.pending.Swap(false) {
				topics = append(topics, t)
			}
		}
		m.mu.Unlock()
		for _, t := range topics {
			if err := m.mcp.ResourceUpdated(context.Background(), &sdk.ResourceUpdatedNotificationParams{URI: topicURI + t}); err != nil {
				m.log.Debug("resources/updated not sent", zap.String("topic", t), zap.Error(err))
			}
		}
	}
}
