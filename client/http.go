package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/switchboard-rpc/switchboard/peer"
)

// HTTPClient makes one-shot calls and batches over HTTP POST, one request
// per call, for programs that do not want a long-lived connection. There
// is no connection for the hub to call back on or to deliver events to.
// It is safe for concurrent use.
type HTTPClient struct {
	url    string
	o      HTTPOptions
	hc     *http.Client
	ownHC  bool
	nextID atomic.Uint64
}

// HTTPOptions configures an [HTTPClient] ([NewHTTP]). A nil *HTTPOptions
// is valid and gives the defaults; zero fields mean their defaults too.
// NewHTTP copies the struct, so it may be reused.
type HTTPOptions struct {
	// Token, if set, is sent as "Authorization: Bearer <Token>" with every
	// POST.
	Token string

	// Header holds extra HTTP headers for every POST.
	Header http.Header

	// TLSConfig configures TLS for https:// URLs. Nil uses the system's
	// roots. Ignored when HTTPClient is set.
	TLSConfig *tls.Config

	// HTTPClient carries the POSTs. Default: a client of its own, built
	// from TLSConfig, whose idle connections are closed by Close.
	HTTPClient *http.Client

	// CallTimeout bounds a call whose context has no deadline. Default
	// [peer.DefaultCallTimeout]; negative means no bound.
	CallTimeout time.Duration

	// MaxMessage caps a response body, in bytes. Default
	// [peer.DefaultMaxMessage].
	MaxMessage int
}

// NewHTTP returns a client that POSTs to url (http:// or https://, usually
// ending in /rpc).
func NewHTTP(url string, opts *HTTPOptions) *HTTPClient {
	h := &HTTPClient{url: url}
	if opts != nil {
		h.o = *opts
	}
	if h.o.CallTimeout == 0 {
		h.o.CallTimeout = peer.DefaultCallTimeout
	}
	if h.o.MaxMessage <= 0 {
		h.o.MaxMessage = peer.DefaultMaxMessage
	}
	h.o.Header = withToken(h.o.Header, h.o.Token)
	h.hc, h.ownHC = httpClient(h.o.HTTPClient, h.o.TLSConfig)
	return h
}

// Close closes the idle connections of the client's own HTTP transport.
func (h *HTTPClient) Close() error {
	if h.ownHC {
		h.hc.CloseIdleConnections()
	}
	return nil
}

// StatusError is returned when the server answers a POST with an HTTP
// status other than 200 (or 204 for notifications): 401, 413, 415...,
// and by Dial when the WebSocket handshake is refused. Err is the
// JSON-RPC error the body holds, or -32001 for a 401 or 403 without one,
// and errors.As finds it.
type StatusError struct {
	StatusCode int
	Status     string      // "413 Request Entity Too Large"
	Body       string      // the start of the response body
	Err        *peer.Error // the JSON-RPC error in the body, if any
	// RetryAfter is the response's Retry-After, in either of its forms
	// (seconds, or an HTTP date), 0 if it has none: how long the server
	// asks to be left alone, as a hub at its connection limit does with
	// 503. The client's reconnection waits at least that long.
	RetryAfter time.Duration
}

func (e *StatusError) Error() string {
	switch {
	case e.Err != nil:
		return "client: HTTP " + e.Status + ": " + e.Err.Error()
	case e.Body == "":
		return "client: HTTP " + e.Status
	}
	return "client: HTTP " + e.Status + ": " + e.Body
}

// Unwrap returns Err, so that errors.As(err, &rpcErr) sees it.
func (e *StatusError) Unwrap() error {
	if e.Err == nil {
		return nil
	}
	return e.Err
}

// request is a JSON-RPC request as sent over POST.
type request struct {
	JSONRPC string          `json:"jsonrpc"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
	ID      *uint64         `json:"id,omitempty"`
}

// response is a JSON-RPC response as read from a POST reply.
type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *peer.Error     `json:"error"`
}

// Call POSTs a call of method with params and decodes the result into
// result, as [Client.Call] does. It returns a *peer.Error when the server
// answered with one, a *StatusError for an HTTP error status, and a
// transport error otherwise. A ctx without a deadline gets
// HTTPOptions.CallTimeout.
func (h *HTTPClient) Call(ctx context.Context, method string, params, result any) error {
	req, err := h.request(method, params, false)
	if err != nil {
		return err
	}
	body, err := h.post(ctx, req)
	if err != nil {
		return err
	}
	if body == nil {
		return errors.New("client: no response to a call")
	}
	var resp response
	if err := json.Unmarshal(body, &resp); err != nil {
		return fmt.Errorf("client: invalid response: %w", err)
	}
	return decode(&resp, method, result)
}

// Notify POSTs a notification; the server answers 204 No Content.
func (h *HTTPClient) Notify(ctx context.Context, method string, params any) error {
	req, err := h.request(method, params, true)
	if err != nil {
		return err
	}
	_, err = h.post(ctx, req)
	return err
}

// Batch POSTs the elements as one batch, as [Client.Batch] does.
func (h *HTTPClient) Batch(ctx context.Context, elems []peer.BatchElem) error {
	if len(elems) == 0 {
		return nil
	}
	reqs := make([]*request, len(elems))
	byID := make(map[string]*peer.BatchElem)
	for i := range elems {
		r, err := h.request(elems[i].Method, elems[i].Params, elems[i].Notify)
		if err != nil {
			return fmt.Errorf("client: batch element %d (%s): %w", i, elems[i].Method, err)
		}
		reqs[i] = r
		if r.ID != nil {
			byID[strconv.FormatUint(*r.ID, 10)] = &elems[i]
		}
	}
	body, err := h.post(ctx, reqs)
	if err != nil || len(byID) == 0 {
		for _, e := range byID {
			e.Err = err
		}
		return err
	}
	var resps []response
	if err := json.Unmarshal(body, &resps); err != nil {
		// A batch refused as a whole gets a single error object.
		var one response
		if json.Unmarshal(body, &one) == nil && one.Error != nil {
			err = one.Error
		} else {
			err = fmt.Errorf("client: invalid batch response: %w", err)
		}
		for _, e := range byID {
			e.Err = err
		}
		return err
	}
	for i := range resps {
		e := byID[string(resps[i].ID)]
		if e == nil {
			continue
		}
		delete(byID, string(resps[i].ID))
		e.Err = decode(&resps[i], e.Method, e.Result)
	}
	for _, e := range byID {
		e.Err = errors.New("client: no response to this batch element")
	}
	return nil
}

// Publish publishes data on topic (rpc.publish) and returns how many
// peers it reached.
func (h *HTTPClient) Publish(ctx context.Context, topic string, data any) (int, error) {
	var res struct {
		Delivered int `json:"delivered"`
	}
	err := h.Call(ctx, "rpc.publish", publishParams{Topic: topic, Data: data}, &res)
	return res.Delivered, err
}

func (h *HTTPClient) request(method string, params any, notify bool) (*request, error) {
	p, err := marshalParams(params)
	if err != nil {
		return nil, err
	}
	r := &request{JSONRPC: "2.0", Method: method, Params: p}
	if !notify {
		id := h.nextID.Add(1)
		r.ID = &id
	}
	return r, nil
}

// post sends v and returns the reply body, nil for 204 No Content.
func (h *HTTPClient) post(ctx context.Context, v any) ([]byte, error) {
	if _, ok := ctx.Deadline(); !ok && h.o.CallTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, h.o.CallTimeout)
		defer cancel()
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	for k, vs := range h.o.Header {
		req.Header[k] = vs
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.hc.Do(req)
	if err != nil {
		return nil, err // *url.Error: "Post "http://...": dial tcp ...: connection refused"
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(h.o.MaxMessage)+1))
	if err != nil {
		return nil, fmt.Errorf("client: read response: %w", err)
	}
	switch {
	case resp.StatusCode == http.StatusNoContent:
		return nil, nil
	case resp.StatusCode != http.StatusOK:
		return nil, statusError(resp, body)
	case len(body) > h.o.MaxMessage:
		return nil, fmt.Errorf("client: response over %d bytes", h.o.MaxMessage)
	}
	return body, nil
}

// statusError describes an HTTP reply that is not the one expected.
func statusError(resp *http.Response, body []byte) *StatusError {
	se := &StatusError{StatusCode: resp.StatusCode, Status: resp.Status, RetryAfter: retryAfter(resp.Header.Get("Retry-After"), time.Now())}
	var r response
	if json.Unmarshal(body, &r) == nil && r.Error != nil {
		se.Err = r.Error
		return se
	}
	se.Body = strings.TrimSpace(string(body[:min(len(body), 200)]))
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		// A refused WebSocket handshake has a plain-text body; it is
		// still the protocol's -32001.
		se.Err = &peer.Error{Code: peer.CodeUnauthorized, Message: http.StatusText(resp.StatusCode)}
	}
	return se
}

// retryAfter reads a Retry-After header (RFC 9110, section 10.2.3): a
// number of seconds, or a date, taken from now; 0 if absent or invalid.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil {
		return time.Duration(max(n, 0)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}

// decode turns a response into the call's outcome.
func decode(r *response, method string, result any) error {
	if r.Error != nil {
		return r.Error
	}
	if r.JSONRPC != "2.0" || r.Result == nil {
		return errors.New("client: invalid response")
	}
	if result == nil {
		return nil
	}
	if raw, ok := result.(*json.RawMessage); ok {
		*raw = append((*raw)[:0], r.Result...)
		return nil
	}
	if err := json.Unmarshal(r.Result, result); err != nil {
		return fmt.Errorf("client: decode result of %s: %w", method, err)
	}
	return nil
}

// marshalParams encodes params, which must become a JSON array or object
// (or be nil, to omit them), as the protocol requires.
func marshalParams(params any) (json.RawMessage, error) {
	if params == nil {
		return nil, nil
	}
	b, ok := params.(json.RawMessage)
	if !ok {
		var err error
		if b, err = json.Marshal(params); err != nil {
			return nil, err
		}
	}
	t := bytes.TrimSpace(b)
	if len(t) == 0 || (t[0] != '[' && t[0] != '{') || !json.Valid(t) {
		return nil, peer.Errorf(peer.CodeInvalidParams, "params must be a JSON array or object")
	}
	return t, nil
}
