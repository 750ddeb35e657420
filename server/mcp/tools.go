package mcp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-rpc/switchboard/hub"
)

// pageSize is the most tools one tools/list answer holds: the SDK's default.
const pageSize = sdk.DefaultPageSize

// middleware answers tools/list and tools/call itself: the SDK keeps one
// tool list for all sessions, and the hub's depends on the caller.
func (m *Handler) middleware(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		ss, ok := req.GetSession().(*sdk.ServerSession)
		if !ok {
			return next(ctx, method, req)
		}
		s := m.track(ss, identityOf(req.GetExtra()))
		switch r := req.(type) {
		case *sdk.ListToolsRequest:
			return m.listTools(withIdentity(ctx, r.Extra), s, r.Params)
		case *sdk.CallToolRequest:
			return m.callTool(withIdentity(ctx, r.Extra), s, r)
		case *sdk.ReadResourceRequest:
			return m.readTopic(withIdentity(ctx, r.Extra), s, r)
		case *sdk.ServerRequest[*sdk.InitializeParams]:
			// What the session may list now: a change from it is told,
			// even before the session lists tools.
			if _, fp, err := m.tools(withIdentity(ctx, r.Extra)); err == nil {
				s.mu.Lock()
				s.tools = fp
				s.mu.Unlock()
			}
		}
		return next(ctx, method, req)
	}
}

// listTools answers tools/list, a page at a time.
func (m *Handler) listTools(ctx context.Context, s *session, p *sdk.ListToolsParams) (*sdk.ListToolsResult, error) {
	tools, fp, err := m.tools(ctx)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.tools = fp
	s.mu.Unlock()
	start := 0
	if p != nil && p.Cursor != "" {
		after, err := base64.RawURLEncoding.DecodeString(p.Cursor)
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid cursor"}
		}
		start = sort.Search(len(tools), func(i int) bool { return tools[i].Name > string(after) })
	}
	res := &sdk.ListToolsResult{Tools: tools[start:]}
	res.CacheScope = "private" // the list is the caller's
	if len(res.Tools) > pageSize {
		res.Tools = res.Tools[:pageSize]
		res.NextCursor = base64.RawURLEncoding.EncodeToString([]byte(res.Tools[pageSize-1].Name))
	}
	return res, nil
}

// method is what tools/list needs of a method object of rpc.discover.
type method struct {
	Name        string `json:"name"`
	Summary     string `json:"summary"`
	Description string `json:"description"`
	Params      []struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Required    bool            `json:"required"`
		Schema      json.RawMessage `json:"schema"`
	} `json:"params"`
}

// tools returns the tools the caller behind ctx may list, sorted by name,
// and a fingerprint of them.
func (m *Handler) tools(ctx context.Context) ([]*sdk.Tool, string, error) {
	res, err := m.call(ctx, "rpc.discover", nil)
	if err != nil {
		return nil, "", fmt.Errorf("rpc.discover: %w", err)
	}
	described, err := m.described(res)
	if err != nil {
		return nil, "", fmt.Errorf("rpc.discover: %w", err)
	}
	seen := make(map[string]bool, len(described))
	var tools []*sdk.Tool
	for _, t := range described {
		if seen[t.Name] || m.srv.Callable(ctx, t.Name) != nil {
			continue
		}
		seen[t.Name] = true
		tools = append(tools, t)
	}
	// Provided and described by nobody, here or on another node: any
	// object.
	for _, name := range m.hub.ProvidedNames() {
		if seen[name] || strings.ContainsAny(name, "*>") || m.srv.Callable(ctx, name) != nil {
			continue
		}
		seen[name] = true
		tools = append(tools, &sdk.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)})
	}
	sort.Slice(tools, func(i, j int) bool { return tools[i].Name < tools[j].Name })
	sum := sha256.New()
	for _, t := range tools {
		// Each schema is raw JSON already: nothing is encoded again.
		sum.Write([]byte(t.Name))
		sum.Write([]byte{0})
		sum.Write([]byte(t.Description))
		sum.Write([]byte{0})
		sum.Write(t.InputSchema.(json.RawMessage))
		sum.Write([]byte{0})
	}
	return tools, string(sum.Sum(nil)), nil
}

// described returns the tools of the methods of the rpc.discover document
// doc, in its order, rpc.* left out. The last document's are kept: for
// 1,000 methods, decoding a document and making its tools took 40% of the
// hub's CPU time per tools/list, and comparing it with the last one takes
// a fraction of a percent. The tools returned are shared: they are not to
// be changed.
func (m *Handler) described(doc json.RawMessage) ([]*sdk.Tool, error) {
	m.lastMu.Lock()
	last, tools := m.lastDoc, m.lastTools
	m.lastMu.Unlock()
	if last != nil && bytes.Equal(doc, last) {
		return tools, nil
	}
	var d struct {
		Methods []method `json:"methods"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, err
	}
	tools = make([]*sdk.Tool, 0, len(d.Methods))
	for _, md := range d.Methods {
		if !strings.HasPrefix(md.Name, "rpc.") {
			tools = append(tools, toolOf(md))
		}
	}
	m.lastMu.Lock()
	m.lastDoc, m.lastTools = doc, tools
	m.lastMu.Unlock()
	return tools, nil
}

// toolOf makes a method's tool: its named params become the properties of
// its input schema.
func toolOf(md method) *sdk.Tool {
	props := make(map[string]json.RawMessage, len(md.Params))
	required := []string{}
	for _, p := range md.Params {
		schema := p.Schema
		if len(schema) == 0 || string(schema) == "null" {
			schema = json.RawMessage(`{}`)
		}
		if p.Description != "" {
			var s map[string]any
			if json.Unmarshal(schema, &s) == nil && s["description"] == nil {
				s["description"] = p.Description
				schema, _ = json.Marshal(s)
			}
		}
		props[p.Name] = schema
		if p.Required {
			required = append(required, p.Name)
		}
	}
	in := map[string]any{"type": "object"}
	if len(props) > 0 {
		in["properties"] = props
	}
	if len(required) > 0 {
		in["required"] = required
	}
	desc := md.Description
	switch {
	case desc == "":
		desc = md.Summary
	case md.Summary != "" && !strings.HasPrefix(desc, md.Summary):
		desc = md.Summary + "\n\n" + desc
	}
	schema, err := json.Marshal(in)
	if err != nil { // a param's schema is not JSON: the method takes any object
		schema = []byte(`{"type":"object"}`)
	}
	return &sdk.Tool{Name: md.Name, Description: desc, InputSchema: json.RawMessage(schema)}
}

// toolsMayChange wakes followTools: the provided methods changed (it is
// the hub's WatchProvided function, run with the hub's locks held, so it
// does nothing more), or a session's grants did.
func (m *Handler) toolsMayChange() {
	select {
	case m.provided <- struct{}{}:
	default:
	}
}

// ToolsChanged tells the Handler that what sessions may list may have
// changed other than by the peers' provisions, which it follows by
// itself: the rules or the policy were replaced (a configuration
// reloaded), or the server serves other methods. It works out again, per
// user with an open session, the tools they may list, and tells the
// sessions within 2 s when any changed. It does not block.
func (m *Handler) ToolsChanged() { m.toolsMayChange() }

// followTools computes again the tools each session may list each time
// the provided methods change, and tells the sessions when any has
// changed. Changes that come while it computes are taken together next.
func (m *Handler) followTools() {
	defer m.wg.Done()
	for {
		select {
		case <-m.stop:
			return
		case <-m.provided:
		}
		if m.toolsChanged() {
			m.notifyToolsChanged()
		}
	}
}

// toolsChanged reports whether the tools a session may list changed since
// it last listed them or since the last change. Sessions of one user share
// one computation.
func (m *Handler) toolsChanged() bool {
	m.mu.Lock()
	sessions := make([]*session, 0, len(m.sessions))
	for _, s := range m.sessions {
		sessions = append(sessions, s)
	}
	m.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), recomputeWait)
	defer cancel()
	byUser := make(map[string]string)
	changed := false
	for _, s := range sessions {
		fp, ok := byUser[s.user]
		if !ok {
			_, f, err := m.tools(hub.WithIdentity(ctx, s.currentIdentity()))
			if err != nil {
				continue
			}
			fp, byUser[s.user] = f, f
		}
		s.mu.Lock()
		if s.tools != "" && s.tools != fp {
			changed = true
		}
		s.tools = fp
		s.mu.Unlock()
	}
	return changed
}

// placeholder is the tool whose adding and removing makes the SDK send
// notifications/tools/list_changed: it does so only when its own tool set
// changes, to every session. The tool is never listed nor called: this
// package answers tools/list and tools/call itself.
var placeholder = &sdk.Tool{Name: "switchboard.changed", InputSchema: json.RawMessage(`{"type":"object"}`)}

// notifyToolsChanged sends notifications/tools/list_changed to every
// session (with an open server stream: the SDK drops it for the others).
func (m *Handler) notifyToolsChanged() {
	m.mcp.AddTool(placeholder, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown tool"}
	})
	m.mcp.RemoveTools(placeholder.Name)
}
