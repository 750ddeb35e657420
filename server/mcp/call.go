package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-rpc/switchboard/internal/jsonx"
	"github.com/switchboard-rpc/switchboard/peer"
)

// callTool answers tools/call: the method runs as an HTTP POST caller's
// call of it would (section 10 of PROTOCOL.md gives the mapping).
func (m *Handler) callTool(ctx context.Context, s *session, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	name := req.Params.Name
	if m.srv.Callable(ctx, name) != nil {
		// Unknown and forbidden alike: the tool's existence is not told.
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown tool: " + strconv.Quote(name)}
	}
	args := bytes.TrimSpace(req.Params.Arguments)
	if string(args) == "null" {
		args = nil
	}
	if len(args) > 0 && args[0] != '{' {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "arguments must be an object"}
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	end, refused := s.begin(cancel, m.o.MaxInFlight)
	if refused != nil {
		// A tool error, not a JSON-RPC one: the SDK's clients take
		// -32004 for "server is closing" and drop the session.
		return toolError(refused), nil
	}
	defer end()
	// The answer goes on the stream of the POST that carried the call:
	// when its client goes away, no one can receive it.
	if key := req.Extra.Header.Get(postKey); key != "" {
		if post, ok := m.posts.Load(key); ok {
			stop := context.AfterFunc(post.(context.Context), cancel)
			defer stop()
		}
	}
	if token := req.Params.GetProgressToken(); token != nil {
		prog := newProgress(ctx, req.Session, token)
		defer prog.close() // the notes sent before the answer go before it
		ctx = peer.WithProgress(ctx, prog.note)
	}
	res, err := m.call(ctx, name, args)
	if err != nil {
		e, ok := err.(*peer.Error)
		if !ok {
			return nil, err
		}
		return toolError(e), nil
	}
	out := &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(res)}}}
	if r := bytes.TrimSpace(res); len(r) > 0 && r[0] == '{' {
		out.StructuredContent = json.RawMessage(r)
	}
	return out, nil
}

// call runs a call of method with params (raw JSON, nil for none) as a
// POST caller's, and returns its result or its error, a *peer.Error.
func (m *Handler) call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	body := make([]byte, 0, 64+len(method)+len(params))
	body = append(body, `{"jsonrpc":"2.0","id":1,"method":`...)
	body = strconv.AppendQuote(body, method)
	if len(params) > 0 {
		body = append(body, `,"params":`...)
		body = append(body, params...)
	}
	body = append(body, '}')
	res, err := peer.Reply(m.srv.Respond(ctx, body))
	if _, ok := err.(*peer.Error); err != nil && !ok {
		return nil, &peer.Error{Code: peer.CodeInternalError, Message: "Internal error"}
	}
	return res, err
}

// toolError is the result of a tool call that failed with e.
func toolError(e *peer.Error) *sdk.CallToolResult {
	se, _ := jsonx.Marshal(map[string]any{"error": e})
	return &sdk.CallToolResult{
		IsError:           true,
		Content:           []sdk.Content{&sdk.TextContent{Text: e.Message}},
		StructuredContent: json.RawMessage(se),
	}
}
