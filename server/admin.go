package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/internal/jsonx"
	"github.com/switchboard-rpc/switchboard/internal/openrpc"
	"github.com/switchboard-rpc/switchboard/peer"
)

// The admin API (docs/operations.md): JSON-RPC methods named admin.* for
// operators and backends, served on the main endpoint to a caller that
// Options.AuthorizeAdmin lets in, and to every caller of the operator's
// endpoint (AdminHandler, on a listener of its own). They answer for the
// whole cluster (see hub.AdminBroker).

// AdminMethods are the methods of the admin API.
var AdminMethods = []string{
	"admin.peers", "admin.topics", "admin.providers", "admin.info",
	"admin.disconnect", "admin.unsubscribe", "admin.publish", "admin.broadcast",
	"admin.refusals",
}

// operatorKey marks the context of a request that came through
// AdminHandler; its value is the operator's identity (nil without
// authentication).
type operatorKey struct{}

func isOperator(ctx context.Context) bool {
	_, ok := ctx.Value(operatorKey{}).(operator)
	return ok
}

type operator struct{ identity any }

// AdminHandler returns the operator's endpoint: JSON-RPC as at /rpc (a
// POST, or a WebSocket that joins the hub as any peer), where every
// caller may call the admin API. Serve it on a listener only operators
// reach (cmd/hub serves it at /rpc of -metrics-addr), behind
// [Server.Guard] for the Host check.
//
// auth, if set, authenticates each request in place of
// Options.Authenticate (401, or 403 for ErrForbidden), as
// GuardOptions.Operator does: the operator's own credentials, such as a
// static token, not what a login system issues to every user. Nil: no
// authentication, the listener itself is the boundary.
func (s *Server) AdminHandler(auth func(*http.Request) (any, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/rpc" && r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		var identity any
		preflight := r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
		if auth != nil && !preflight { // browsers send no credentials with a preflight
			id, ok := s.authenticateWith(auth, w, r, r.Method == http.MethodPost)
			if !ok {
				return
			}
			identity = id
		}
		s.serveRPC(w, r.WithContext(context.WithValue(r.Context(), operatorKey{}, operator{identity})))
	})
}

// adminAllowed decides an admin call: any on the operator's endpoint,
// else what Options.AuthorizeAdmin says (nil: none).
func (s *Server) adminAllowed(ctx context.Context, method string) error {
	if isOperator(ctx) {
		return nil
	}
	if s.o.AuthorizeAdmin != nil {
		err := s.o.AuthorizeAdmin(ctx, method)
		if err == nil {
			return nil
		}
		if e, ok := errors.AsType[*peer.Error](err); ok {
			return e
		}
	}
	return peer.Errorf(peer.CodeUnauthorized, "Unauthorized: %s needs the admin grant", method)
}

// adminLookup serves the admin methods before next, to the callers
// adminAllowed lets in (-32001 to the others), and adds them to next's
// rpc.discover for those callers. It returns nil for other methods.
func (s *Server) adminLookup(method string, next peer.Router) (peer.Handler, peer.Mode) {
	if method == "rpc.discover" {
		own, mode := next.Lookup(method)
		if own == nil {
			return nil, mode
		}
		return peer.HandlerFunc(func(ctx context.Context, req *peer.Request) (any, error) {
			return s.discoverAdmin(ctx, req, own)
		}), mode
	}
	if !strings.HasPrefix(method, "admin.") {
		return nil, peer.Concurrent
	}
	h, mode := s.adminMux().Lookup(method)
	if h == nil {
		return nil, mode
	}
	return peer.HandlerFunc(func(ctx context.Context, req *peer.Request) (any, error) {
		if err := s.adminAllowed(ctx, req.Method); err != nil {
			s.audit.HubRefused(ctx, hub.Refusal{Peer: s.hub.PeerFromContext(ctx), Action: hub.Call, Target: req.Method, Err: err})
			return nil, err
		}
		return h.ServeRPC(ctx, req)
	}), mode
}

// discoverAdmin answers rpc.discover with own's document, and the admin
// methods the caller may call.
func (s *Server) discoverAdmin(ctx context.Context, req *peer.Request, own peer.Handler) (any, error) {
	res, err := own.ServeRPC(ctx, req)
	if err != nil {
		return nil, err
	}
	var mine []openrpc.Method
	for _, m := range s.adminDoc() {
		if s.adminAllowed(ctx, m.Name) == nil {
			mine = append(mine, m)
		}
	}
	if len(mine) == 0 {
		return res, nil
	}
	doc, err := jsonx.Marshal(res)
	if err != nil {
		return nil, err
	}
	out, err := openrpc.Add(doc, mine)
	if err != nil {
		return res, nil // not a document: leave it as it is
	}
	return out, nil
}

type adminState struct {
	mux *peer.Mux
	doc []openrpc.Method
}

// adminMux returns the mux of the admin methods, made once per server.
func (s *Server) adminMux() *peer.Mux { return s.adminState().mux }

// adminDoc returns the method objects that describe the admin methods.
func (s *Server) adminDoc() []openrpc.Method { return s.adminState().doc }

func (s *Server) adminState() *adminState {
	s.adminInit.Do(func() {
		m := s.newAdminMux()
		discover, _ := m.Lookup("rpc.discover")
		var doc []openrpc.Method
		if raw, err := discover.ServeRPC(context.Background(), &peer.Request{Method: "rpc.discover"}); err == nil {
			if b, err := jsonx.Marshal(raw); err == nil {
				doc, _ = openrpc.Methods(b)
			}
		}
		s.admin = &adminState{mux: m, doc: doc}
	})
	return s.admin
}

// The params and results of the admin methods that the hub's types do
// not give. Each result that comes from the nodes of a cluster names
// those that did not answer in time, whose part is missing from it.
type (
	peersResult struct {
		Peers      []hub.PeerDetail `json:"peers"`
		Next       string           `json:"next,omitempty"`
		Unanswered []string         `json:"unanswered,omitempty"`
	}
	topicsResult struct {
		Topics     []hub.TopicDetail `json:"topics"`
		Next       string            `json:"next,omitempty"`
		Unanswered []string          `json:"unanswered,omitempty"`
	}
	providersParams struct {
		Method string `json:"method,omitempty"` // "" for every provider
	}
	providersResult struct {
		Providers  []hub.ProviderDetail `json:"providers"`
		Unanswered []string             `json:"unanswered,omitempty"`
	}
	infoResult struct {
		Version string         `json:"version"`
		Started time.Time      `json:"started"`
		Uptime  float64        `json:"uptime_seconds"`
		Node    string         `json:"node,omitempty"`
		Nodes   []hub.NodeInfo `json:"nodes"`
		// Unanswered are the nodes that did not answer, missing from Nodes.
		Unanswered []string `json:"unanswered,omitempty"`
	}
	disconnectParams struct {
		Peer   string `json:"peer,omitempty"`
		User   string `json:"user,omitempty"`
		Code   int    `json:"code,omitempty"`
		Reason string `json:"reason,omitempty"`
		Revoke bool   `json:"revoke,omitempty"`
	}
	disconnectResult struct {
		Disconnected  []hub.PeerInfo `json:"disconnected"`
		RevokedBefore *time.Time     `json:"revoked_before,omitempty"` // the user's tokens issued before this are refused
		// Unanswered are the nodes that did not answer: their peers may
		// still be connected (and the revocation not known there).
		Unanswered []string `json:"unanswered,omitempty"`
	}
	unsubscribeResult struct {
		Unsubscribed []hub.Unsubscribed `json:"unsubscribed"`
		Unanswered   []string           `json:"unanswered,omitempty"`
	}
	publishParams struct {
		Topic string          `json:"topic"`
		Data  json.RawMessage `json:"data"`
	}
	broadcastParams struct {
		Topics []string        `json:"topics"`
		Data   json.RawMessage `json:"data"`
	}
	broadcastResult struct {
		Published []hub.Published `json:"published"`
	}
	refusalsResult struct {
		Refusals   []hub.RefusalDetail `json:"refusals"`
		Unanswered []string            `json:"unanswered,omitempty"`
	}
)

// unanswered moves the nodes of a [*hub.UnansweredError] into the result
// (*nodes), which is good without them; it returns any other error.
func unanswered(err error, nodes *[]string) error {
	if ue, ok := errors.AsType[*hub.UnansweredError](err); ok {
		*nodes = ue.Nodes
		return nil
	}
	return err
}

// newAdminMux returns the admin methods, typed so that rpc.discover
// describes them.
func (s *Server) newAdminMux() *peer.Mux {
	h := s.hub
	m := peer.NewMux()
	m.Handle("admin.peers", peer.Func(func(ctx context.Context, q hub.PeerQuery) (peersResult, error) {
		page, err := h.ListPeers(ctx, q)
		res := peersResult{Peers: page.Peers, Next: page.Next}
		return res, unanswered(err, &res.Unanswered)
	}))
	m.Describe("admin.peers", peer.Doc{Summary: "The peers connected to the cluster, by id, a page at a time; next is the cursor of the next page.",
		Params: map[string]string{"user": "only this user's", "topic": "only those subscribed to a pattern overlapping this one", "node": "only this node's", "cursor": "the next of the page before", "limit": "at most this many (default 100, at most 1000)"}})
	m.Handle("admin.topics", peer.Func(func(ctx context.Context, q hub.TopicQuery) (topicsResult, error) {
		page, err := h.ListTopics(ctx, q)
		res := topicsResult{Topics: page.Topics, Next: page.Next}
		return res, unanswered(err, &res.Unanswered)
	}))
	m.Describe("admin.topics", peer.Doc{Summary: "The topics held in the history and the patterns subscribed to, that a pattern covers, with their subscribers and history.",
		Params: map[string]string{"pattern": "default >", "cursor": "the next of the page before", "limit": "at most this many (default 100, at most 1000)"}})
	m.Handle("admin.providers", peer.Func(func(ctx context.Context, p providersParams) (providersResult, error) {
		list, err := h.ListProviders(ctx, p.Method)
		res := providersResult{Providers: list}
		return res, unanswered(err, &res.Unanswered)
	}))
	m.Describe("admin.providers", peer.Doc{Summary: "The peers that provide a method, or every provider."})
	m.Handle("admin.info", peer.Func(func(ctx context.Context, _ struct{}) (infoResult, error) {
		nodes, err := h.Nodes(ctx)
		var res infoResult
		if err = unanswered(err, &res.Unanswered); err != nil {
			return infoResult{}, err
		}
		res.Version, res.Started, res.Uptime = version(), h.Started(), time.Since(h.Started()).Seconds()
		res.Node, res.Nodes = nodes[0].Node, nodes
		return res, nil
	}))
	m.Describe("admin.info", peer.Doc{Summary: "The hub's version and uptime, and the nodes of its cluster with their peers and load."})
	m.Handle("admin.disconnect", peer.Func(func(ctx context.Context, p disconnectParams) (disconnectResult, error) {
		// Tokens say when they were issued in whole seconds: those of
		// the second of the kick count as issued before it.
		before := time.Now().Truncate(time.Second).Add(time.Second)
		d := hub.Disconnect{Peer: p.Peer, User: p.User, Code: p.Code, Reason: p.Reason, Revoke: p.Revoke, Before: before}
		gone, err := h.Disconnect(ctx, d)
		res := disconnectResult{Disconnected: gone}
		if err = unanswered(err, &res.Unanswered); err != nil {
			return disconnectResult{}, err
		}
		if p.Revoke {
			res.RevokedBefore = &d.Before
		}
		return res, nil
	}))
	m.Describe("admin.disconnect", peer.Doc{Summary: "Closes a peer, or every peer of a user, on every node; with revoke, refuses the user's tokens issued before now until the hub restarts.",
		Params: map[string]string{"code": "the close code (default 4003)", "reason": "the close reason", "revoke": "refuse the user's tokens issued before now"}})
	m.Handle("admin.unsubscribe", peer.Func(func(ctx context.Context, u hub.Unsubscribe) (unsubscribeResult, error) {
		list, err := h.Unsubscribe(ctx, u)
		res := unsubscribeResult{Unsubscribed: list}
		return res, unanswered(err, &res.Unanswered)
	}))
	m.Describe("admin.unsubscribe", peer.Doc{Summary: "Ends the subscriptions of a peer, or of every peer of a user, to the patterns a topic pattern covers; each peer is told with rpc.revoked."})
	m.Handle("admin.publish", peer.Func(func(ctx context.Context, p publishParams) (hub.Published, error) {
		out, err := h.Broadcast(ctx, []string{p.Topic}, p.Data)
		if err != nil {
			return hub.Published{}, err
		}
		return out[0], nil
	}))
	m.Describe("admin.publish", peer.Doc{Summary: "Publishes data on a topic, whatever the Policy says."})
	m.Handle("admin.broadcast", peer.Func(func(ctx context.Context, p broadcastParams) (broadcastResult, error) {
		if len(p.Topics) == 0 {
			return broadcastResult{}, peer.Errorf(peer.CodeInvalidParams, `Invalid params: "topics" lists no topic`)
		}
		out, err := h.Broadcast(ctx, p.Topics, p.Data)
		return broadcastResult{Published: out}, err
	}))
	m.Describe("admin.broadcast", peer.Doc{Summary: "Publishes data on each of several topics, in order."})
	m.Handle("admin.refusals", peer.Func(func(ctx context.Context, q hub.RefusalQuery) (refusalsResult, error) {
		list, err := h.ListRefusals(ctx, q)
		res := refusalsResult{Refusals: list}
		return res, unanswered(err, &res.Unanswered)
	}))
	m.Describe("admin.refusals", peer.Doc{Summary: "The last refusals of the audit trail on every node, newest first: who was refused what, by which check.",
		Params: map[string]string{"limit": "at most this many (default 100, at most 1000); each node keeps its last 100"}})
	return m
}

// version returns the hub's module version, as the build recorded it.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
