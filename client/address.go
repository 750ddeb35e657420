package client

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/switchboard-rpc/switchboard/peer"
)

// This file calls chosen peers through the hub (rpc.call): one by its id,
// or every peer of a user or of a topic; and asks the hub who this client
// is (rpc.whoami).

// Address names the peers an rpc.call reaches: set exactly one field.
type Address struct {
	Peer  string // a peer's id, as WhoAmI and Presence show it
	User  string // every peer of one identity
	Topic string // every peer an event on this topic would reach (no wildcards)
}

// PeerResult is one peer's answer to a call of several peers: its result
// as raw JSON, or its error.
type PeerResult struct {
	Peer   PeerInfo        `json:"peer"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *peer.Error     `json:"error,omitempty"`
}

// PeerResults is the answer of a call of several peers: one entry per
// peer, in no particular order, as many as fit in one message of the
// hub's. When the peers' answers together would exceed the hub's message
// size limit, the hub leaves out those that do not fit: Truncated is then
// true, and Asked, the number of peers called, is more than
// len(Results). In a cluster of hubs, when nodes did not say in time which
// peers they have, their peers were not called: Incomplete is then true,
// and Unanswered names those nodes.
type PeerResults struct {
	Results    []PeerResult `json:"results"`
	Truncated  bool         `json:"truncated,omitempty"`
	Asked      int          `json:"asked,omitempty"` // the hub says it when Truncated; else len(Results)
	Incomplete bool         `json:"incomplete,omitempty"`
	Unanswered []string     `json:"unanswered,omitempty"` // the nodes whose peers were not called
}

// Decode decodes the peer's result into v (a pointer), or returns its
// error.
func (r PeerResult) Decode(v any) error {
	if r.Error != nil {
		return r.Error
	}
	if err := json.Unmarshal(r.Result, v); err != nil {
		return fmt.Errorf("client: decode the result of peer %s: %w", r.Peer.ID, err)
	}
	return nil
}

// caller is what the WebSocket and the HTTP clients share: Call.
type caller interface {
	Call(ctx context.Context, method string, params, result any) error
}

// WhoAmI returns how the hub shows this client: its peer id (the one
// others address it by), its user and its node.
func (c *Client) WhoAmI(ctx context.Context) (PeerInfo, error) {
	return whoAmI(ctx, c)
}

// CallPeer calls method on the peer with the given id, wherever it is
// connected, and decodes its result into result (a pointer; nil discards
// it), as Call does for the hub's methods. The peer's error comes back as
// its *peer.Error, unchanged; the hub's own answers are -32007 (no such
// peer), -32006 (the peer left before answering), -32003 (ctx's deadline
// passed, or the hub's own bound) and -32001 (its policy refused).
// Cancelling ctx cancels the call at the peer, and a ctx made with
// [peer.WithProgress] receives the peer's rpc.progress notifications.
func (c *Client) CallPeer(ctx context.Context, id, method string, params, result any) error {
	return callPeer(ctx, c, id, method, params, result)
}

// CallPeers calls method on every peer of to.User or to.Topic (this
// client left out), at once, and returns one PeerResult for each, in no
// particular order, once the last has answered or ctx's deadline (or the
// hub's bound) passed: those that had not answered by then get -32003.
// No matching peer: no result and no error. When the answers do not all
// fit in one message of the hub's, those that do come back, with
// Truncated set (see [PeerResults]).
func (c *Client) CallPeers(ctx context.Context, to Address, method string, params any) (PeerResults, error) {
	return callPeers(ctx, c, to, method, params)
}

// WhoAmI returns the id the hub gives this HTTP request, and its user.
func (h *HTTPClient) WhoAmI(ctx context.Context) (PeerInfo, error) {
	return whoAmI(ctx, h)
}

// CallPeer is [Client.CallPeer] over HTTP POST: a backend with no
// WebSocket of its own calls a peer connected to the hub.
func (h *HTTPClient) CallPeer(ctx context.Context, id, method string, params, result any) error {
	return callPeer(ctx, h, id, method, params, result)
}

// CallPeers is [Client.CallPeers] over HTTP POST.
func (h *HTTPClient) CallPeers(ctx context.Context, to Address, method string, params any) (PeerResults, error) {
	return callPeers(ctx, h, to, method, params)
}

func whoAmI(ctx context.Context, c caller) (PeerInfo, error) {
	var me PeerInfo
	err := c.Call(ctx, "rpc.whoami", nil, &me)
	return me, err
}

func callPeer(ctx context.Context, c caller, id, method string, params, result any) error {
	p, err := addressed(ctx, Address{Peer: id}, method, params)
	if err != nil {
		return err
	}
	return c.Call(ctx, "rpc.call", p, result)
}

func callPeers(ctx context.Context, c caller, to Address, method string, params any) (PeerResults, error) {
	if to.Peer != "" {
		return PeerResults{}, fmt.Errorf("client: CallPeers takes a user or a topic; CallPeer calls one peer")
	}
	p, err := addressed(ctx, to, method, params)
	if err != nil {
		return PeerResults{}, err
	}
	var res PeerResults
	if err := c.Call(ctx, "rpc.call", p, &res); err != nil {
		return PeerResults{}, err
	}
	if !res.Truncated {
		res.Asked = len(res.Results)
	}
	return res, nil
}

// callParams is the params of rpc.call.
type callParams struct {
	Peer    string          `json:"peer,omitempty"`
	User    string          `json:"user,omitempty"`
	Topic   string          `json:"topic,omitempty"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
	Timeout int64           `json:"timeout,omitempty"` // ms
}

// addressed returns the params of an rpc.call of method on to. The
// deadline of ctx, if any, becomes the call's timeout, so that the hub
// answers for the peers that did not in time.
func addressed(ctx context.Context, to Address, method string, params any) (*callParams, error) {
	n := 0
	for _, s := range []string{to.Peer, to.User, to.Topic} {
		if s != "" {
			n++
		}
	}
	if n != 1 {
		return nil, fmt.Errorf("client: an address needs exactly one of Peer, User and Topic, got %+v", to)
	}
	raw, err := marshalParams(params)
	if err != nil {
		return nil, err
	}
	p := &callParams{Peer: to.Peer, User: to.User, Topic: to.Topic, Method: method, Params: raw}
	if deadline, ok := ctx.Deadline(); ok {
		// A little less than what is left, for the answer to come back.
		left := time.Until(deadline)
		p.Timeout = max(1, (left - left/20).Milliseconds())
	}
	return p, nil
}
