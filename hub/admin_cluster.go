package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/switchboard-rpc/switchboard/internal/jsonx"
	"github.com/switchboard-rpc/switchboard/internal/wildcard"
	"github.com/switchboard-rpc/switchboard/peer"
)

// The admin API over the nodes of a cluster: each listing and each action
// is done on this node and, through a Broker that is an [AdminBroker]
// (hub/natsbroker), asked of every other node, which answers through
// [BrokerHandle.ServeAdmin]; the answers are merged here. A node that
// does not answer in time is left out and named: the methods return what
// the others answered with an [*UnansweredError].

// An AdminBroker is a [Broker] that carries the admin API's requests to
// every other node of the cluster.
type AdminBroker interface {
	Broker

	// AskNodes sends an admin request (op and its JSON params) to every
	// other node it knows, whose hubs answer it with
	// [BrokerHandle.ServeAdmin], and returns the answers that come
	// before ctx ends or a bound of its own passes, with an
	// [*UnansweredError] naming the nodes whose answer did not come.
	// It must not answer the request on this node.
	AskNodes(ctx context.Context, op string, params []byte) ([]NodeAnswer, error)
}

// NodeAnswer is one node's answer to an admin request.
type NodeAnswer struct {
	Node   string          `json:"node"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *peer.Error     `json:"error,omitempty"`
}

// The ops of the admin requests between nodes.
const (
	opPeers       = "peers"
	opTopics      = "topics"
	opProviders   = "providers"
	opNode        = "node"
	opDisconnect  = "disconnect"
	opUnsubscribe = "unsubscribe"
	opRefusals    = "refusals"
)

// remoteRoom bounds what another node puts in an answer, in bytes: NATS
// carries at most 1 MB by default.
const remoteRoom = 900 << 10

// ServeAdmin answers an admin request of another node of the cluster:
// the listings and actions of the admin API, on this node only.
func (b *BrokerHandle) ServeAdmin(ctx context.Context, op string, params json.RawMessage) (json.RawMessage, error) {
	h := b.h
	var res any
	switch op {
	case opPeers:
		var q peersRequest
		if err := json.Unmarshal(params, &q); err != nil {
			return nil, err
		}
		page, more := h.localPeerPage(q.PeerQuery, min(q.Room, remoteRoom))
		a := peersAnswer{Peers: make([]json.RawMessage, len(page)), More: more}
		for i, p := range page {
			a.Peers[i] = p.json
		}
		res = a
	case opTopics:
		var q TopicQuery
		if err := json.Unmarshal(params, &q); err != nil {
			return nil, err
		}
		page, more := h.localTopics(q)
		res = topicsAnswer{Topics: page, More: more}
	case opProviders:
		var method string
		if err := json.Unmarshal(params, &method); err != nil {
			return nil, err
		}
		res = h.localProviders(method)
	case opNode:
		res = h.localNode()
	case opDisconnect:
		var d Disconnect
		if err := json.Unmarshal(params, &d); err != nil {
			return nil, err
		}
		res = h.disconnectLocal(d)
	case opUnsubscribe:
		var u Unsubscribe
		if err := json.Unmarshal(params, &u); err != nil {
			return nil, err
		}
		res = h.unsubscribeLocal(ctx, u)
	case opRefusals:
		var q RefusalQuery
		if err := json.Unmarshal(params, &q); err != nil {
			return nil, err
		}
		res = h.localRefusals(q)
	default:
		return nil, fmt.Errorf("hub: unknown admin request %q", op)
	}
	return jsonx.Marshal(res)
}

// answered is one node's answer, decoded.
type answered[T any] struct {
	node string
	v    T
}

// askNodes asks every other node, when the hub's Broker can, and decodes
// each answer into a new T. It returns the answers decoded before the
// first that failed, with the error; or every answer, with an
// [*UnansweredError] when some nodes did not answer.
func askNodes[T any](ctx context.Context, h *Hub, op string, params any) ([]answered[T], error) {
	ab, ok := h.o.Broker.(AdminBroker)
	if !ok {
		return nil, nil
	}
	raw, err := jsonx.Marshal(params)
	if err != nil {
		return nil, err
	}
	answers, err := ab.AskNodes(ctx, op, raw)
	unanswered, err := splitUnanswered(err)
	if err != nil {
		return nil, err
	}
	out := make([]answered[T], 0, len(answers))
	for _, a := range answers {
		if a.Error != nil {
			return out, peer.Errorf(peer.CodeApplication, "node %s: %s", a.Node, a.Error.Message)
		}
		var v T
		if err := json.Unmarshal(a.Result, &v); err != nil {
			return out, fmt.Errorf("node %s: %w", a.Node, err)
		}
		out = append(out, answered[T]{a.Node, v})
	}
	return out, unanswered
}

// splitUnanswered tells apart an [*UnansweredError], which leaves a
// result incomplete but good, from an error that ends it.
func splitUnanswered(err error) (unanswered, failed error) {
	if _, ok := errors.AsType[*UnansweredError](err); ok {
		return err, nil
	}
	return nil, err
}

// askAll is askNodes for an operation that answers a list: it returns
// local, this node's part, followed by the other nodes' parts in the order
// they came; on an error, with the parts that came before it.
func askAll[T any](ctx context.Context, h *Hub, op string, params any, local []T) ([]T, error) {
	remote, err := askNodes[[]T](ctx, h, op, params)
	for _, a := range remote {
		local = append(local, a.v...)
	}
	return local, err
}

type peersRequest struct {
	PeerQuery
	Room int `json:"room"`
}

type peersAnswer struct {
	Peers []json.RawMessage `json:"peers"` // PeerDetail
	More  bool              `json:"more,omitempty"`
}

// ListPeers lists the peers of the whole cluster that q selects, a page
// at a time, sorted by id; the page's encoding fits within the hub's
// MaxMessage. When some nodes did not answer, it returns the page of the
// others with an [*UnansweredError]: the peers of those nodes are missing
// from it, and the same page asked again may have them.
func (h *Hub) ListPeers(ctx context.Context, q PeerQuery) (PeerPage, error) {
	if q.Topic != "" {
		if err := h.checkTopic(q.Topic, true); err != nil {
			return PeerPage{}, err
		}
	}
	room := h.o.MaxMessage - 256
	var remote []answered[peersAnswer]
	var unanswered error
	if q.Node != h.node() {
		var err error
		remote, err = askNodes[peersAnswer](ctx, h, opPeers, peersRequest{q, room})
		if unanswered, err = splitUnanswered(err); err != nil {
			return PeerPage{}, err
		}
	}
	all, more := h.localPeerPage(q, room)
	for _, a := range remote {
		more = more || a.v.More
		for _, raw := range a.v.Peers {
			var d PeerDetail
			if err := json.Unmarshal(raw, &d); err != nil {
				return PeerPage{}, fmt.Errorf("node %s: %w", a.node, err)
			}
			all = append(all, sizedPeer{d, raw})
		}
	}
	if len(remote) > 0 {
		sort.Slice(all, func(i, j int) bool { return all[i].d.ID < all[j].d.ID })
	}
	limit := pageSize(q.Limit)
	used := 64
	page := PeerPage{Peers: make([]PeerDetail, 0, min(len(all), limit))}
	for i, p := range all {
		if used += len(p.json) + 1; i == limit || used > room && i > 0 {
			more = true
			break
		}
		page.Peers = append(page.Peers, p.d)
	}
	if more && len(page.Peers) > 0 {
		page.Next = page.Peers[len(page.Peers)-1].ID
	}
	return page, unanswered
}

// TopicQuery selects and pages the topics [Hub.ListTopics] lists.
type TopicQuery struct {
	Pattern string `json:"pattern,omitempty"` // the topics and patterns it covers; default ">"
	After   string `json:"cursor,omitempty"`  // those that sort after this: the Next of the page before
	Limit   int    `json:"limit,omitempty"`   // default DefaultPageSize, at most MaxPageSize
}

// TopicDetail is a topic (held in the history) or a pattern (subscribed
// to) as the admin API lists it.
type TopicDetail struct {
	Topic        string `json:"topic"`
	Subscribers  int    `json:"subscribers"`    // subscriptions to exactly this topic or pattern, over the cluster
	Last         uint64 `json:"last,omitempty"` // the position of its latest event held
	History      int    `json:"history"`        // its events held
	HistoryBytes int64  `json:"history_bytes"`  // their size
	// Published counts the events published on it, held or since
	// dropped, from when the history began to hold it (it starts again
	// from 0 when the history forgets an idle topic): the difference
	// between two listings is the topic's events in between, where Last
	// counts those of every topic.
	Published uint64 `json:"published"`
}

// TopicPage is one page of [Hub.ListTopics], sorted by topic.
type TopicPage struct {
	Topics []TopicDetail `json:"topics"`
	Next   string        `json:"next,omitempty"`
}

type topicsAnswer struct {
	Topics []TopicDetail `json:"topics"`
	More   bool          `json:"more,omitempty"`
}

// ListTopics lists the topics held in the history and the patterns
// subscribed to, over the whole cluster, that q.Pattern covers, a page at
// a time. Subscribers are summed over the nodes; the history is the
// largest any node holds (with JetStream, every node holds the same).
// When some nodes did not answer, it returns the page of the others with
// an [*UnansweredError].
func (h *Hub) ListTopics(ctx context.Context, q TopicQuery) (TopicPage, error) {
	if q.Pattern == "" {
		q.Pattern = ">"
	}
	if err := h.checkTopic(q.Pattern, true); err != nil {
		return TopicPage{}, err
	}
	remote, err := askNodes[topicsAnswer](ctx, h, opTopics, q)
	unanswered, err := splitUnanswered(err)
	if err != nil {
		return TopicPage{}, err
	}
	local, more := h.localTopics(q)
	by := make(map[string]*TopicDetail, len(local))
	answers := []topicsAnswer{{Topics: local}}
	for _, a := range remote {
		answers = append(answers, a.v)
	}
	for _, a := range answers {
		more = more || a.More
		for _, t := range a.Topics {
			m := by[t.Topic]
			if m == nil {
				by[t.Topic] = &t
				continue
			}
			m.Subscribers += t.Subscribers
			if t.Last > m.Last {
				m.Last, m.History, m.HistoryBytes, m.Published = t.Last, t.History, t.HistoryBytes, t.Published
			}
		}
	}
	names := make([]string, 0, len(by))
	for n := range by {
		names = append(names, n)
	}
	sort.Strings(names)
	limit := pageSize(q.Limit)
	if len(names) > limit {
		names, more = names[:limit], true
	}
	page := TopicPage{Topics: make([]TopicDetail, len(names))}
	for i, n := range names {
		page.Topics[i] = *by[n]
	}
	if more && len(names) > 0 {
		page.Next = names[len(names)-1]
	}
	return page, unanswered
}

// ProviderDetail is a peer that provides methods, as the admin API lists
// it.
type ProviderDetail struct {
	Peer     string   `json:"peer"`
	User     string   `json:"user,omitempty"`
	Node     string   `json:"node,omitempty"`
	Methods  []string `json:"methods"`
	InFlight int      `json:"in_flight"` // calls forwarded to it, not answered yet
}

// localProviders returns this hub's providers of method (every provider
// when method is ""), sorted by peer.
func (h *Hub) localProviders(method string) []ProviderDetail {
	out := []ProviderDetail{}
	for _, pr := range h.providedMethods() {
		ok := method == ""
		for _, m := range pr.Methods {
			ok = ok || wildcard.Match(m, method)
		}
		if !ok {
			continue
		}
		d := ProviderDetail{Peer: pr.Peer, Node: h.node(), Methods: pr.Methods, InFlight: pr.InFlight}
		if p := h.Peer(pr.Peer); p != nil {
			d.User = userOf(p.identity)
		}
		out = append(out, d)
	}
	return out
}

// ListProviders lists the peers of the whole cluster that provide method
// (a name or pattern they provide matches it), or with method "" every
// peer that provides anything, sorted by node and peer; when some nodes
// did not answer, those of the others with an [*UnansweredError].
func (h *Hub) ListProviders(ctx context.Context, method string) ([]ProviderDetail, error) {
	all, err := askAll(ctx, h, opProviders, method, h.localProviders(method))
	unanswered, err := splitUnanswered(err)
	if err != nil {
		return nil, err
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].Node != all[j].Node {
			return all[i].Node < all[j].Node
		}
		return all[i].Peer < all[j].Peer
	})
	return all, unanswered
}

// NodeInfo is a node of the cluster (or the hub alone) and its load, as
// the admin API shows it.
type NodeInfo struct {
	Node          string    `json:"node,omitempty"`
	Started       time.Time `json:"started"`
	Peers         int       `json:"peers"`
	Subscriptions int       `json:"subscriptions"`
	InFlight      int       `json:"in_flight"`    // calls its peers are serving or being served
	Queued        int64     `json:"queued_bytes"` // bytes waiting to be written to its peers
	Published     uint64    `json:"published"`
	Delivered     uint64    `json:"delivered"`
	Calls         uint64    `json:"calls"`  // requests served (Options.Calls)
	Linked        bool      `json:"linked"` // linked to the other nodes now (always true alone)
}

func (h *Hub) localNode() NodeInfo {
	st := h.Stats()
	n := NodeInfo{
		Node: st.Cluster.Node, Started: h.adm.started, Peers: st.Peers, Subscriptions: st.Subscriptions,
		Published: st.Published, Delivered: st.Delivered, Linked: h.o.Broker == nil || st.Cluster.Connected,
	}
	if h.o.Calls != nil {
		n.Calls = h.o.Calls()
	}
	for _, p := range h.Peers() {
		l := p.conn.Load()
		n.InFlight += l.Serving + l.Calling
		n.Queued += l.Queued
	}
	return n
}

// Started returns when the hub was made.
func (h *Hub) Started() time.Time { return h.adm.started }

// Nodes returns the nodes of the cluster that answer, this one first,
// then the others sorted by name; alone, this hub. When some nodes did not
// answer, it returns the others with an [*UnansweredError].
func (h *Hub) Nodes(ctx context.Context) ([]NodeInfo, error) {
	remote, err := askNodes[NodeInfo](ctx, h, opNode, nil)
	unanswered, err := splitUnanswered(err)
	if err != nil {
		return nil, err
	}
	out := []NodeInfo{h.localNode()}
	for _, a := range remote {
		out = append(out, a.v)
	}
	sort.Slice(out[1:], func(i, j int) bool { return out[1+i].Node < out[1+j].Node })
	return out, unanswered
}

// Disconnect closes the peers d selects on every node of the cluster,
// with d.Code and d.Reason, and with d.Revoke refuses d.User's tokens
// issued before d.Before (default now) on every node until it restarts.
// It returns the peers closed; when some nodes did not answer, those of
// the others with an [*UnansweredError] (the peers of those nodes may
// still be connected).
func (h *Hub) Disconnect(ctx context.Context, d Disconnect) ([]PeerInfo, error) {
	if d.Peer == "" && d.User == "" {
		return nil, invalidParams(`name a "peer" or a "user"`)
	}
	if d.Code == 0 {
		d.Code = CloseKicked
	}
	if d.Code < 1000 || d.Code > 4999 || d.Code == 1005 || d.Code == 1006 || d.Code == 1015 {
		return nil, invalidParams(fmt.Sprintf("close code %d cannot be sent", d.Code))
	}
	if len(d.Reason) > 123 {
		return nil, invalidParams("a close reason takes at most 123 bytes")
	}
	if d.Revoke && d.User == "" {
		return nil, invalidParams(`"revoke" needs a "user"`)
	}
	if d.Before.IsZero() {
		d.Before = time.Now()
	}
	out := []PeerInfo{}
	for _, id := range h.disconnectLocal(d) {
		out = append(out, PeerInfo{ID: id, User: d.User, Node: h.node()})
	}
	remote, err := askNodes[[]string](ctx, h, opDisconnect, d)
	for _, a := range remote {
		for _, id := range a.v {
			out = append(out, PeerInfo{ID: id, User: d.User, Node: a.node})
		}
	}
	return out, err
}

// Unsubscribe ends the subscriptions u selects on every node of the
// cluster, and tells each peer with rpc.revoked. It returns what ended;
// when some nodes did not answer, what ended on the others with an
// [*UnansweredError].
func (h *Hub) Unsubscribe(ctx context.Context, u Unsubscribe) ([]Unsubscribed, error) {
	if u.Peer == "" && u.User == "" {
		return nil, invalidParams(`name a "peer" or a "user"`)
	}
	if err := h.checkTopic(u.Topic, true); err != nil {
		return nil, err
	}
	return askAll(ctx, h, opUnsubscribe, u, h.unsubscribeLocal(ctx, u))
}
