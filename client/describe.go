package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/switchboard-rpc/switchboard/internal/openrpc"
	"github.com/switchboard-rpc/switchboard/peer"
)

// Description describes a method a client provides, in its answer to
// rpc.discover, which the hub relays: what callers and agents read of
// it. Through the hub's MCP endpoint the method is a tool whose
// description is Summary (and Description) and whose input schema is
// made of its named params (docs/mcp.md).
type Description struct {
	// Summary says in one line what the method does.
	Summary string

	// Description says more, if anything.
	Description string

	// Params describes each named param, by its name.
	Params map[string]string

	// Schema, when not nil, is the JSON Schema of the params object:
	// {"type": "object", "properties": {name: schema, ...}, "required":
	// [name, ...]}. Each property becomes a named param. Without it, the
	// params are those of the handler's type when it is a [peer.Func], or
	// any value.
	Schema json.RawMessage
}

// paramsSchema is what a Description's Schema gives.
type paramsSchema struct {
	Type       string                     `json:"type"`
	Properties map[string]json.RawMessage `json:"properties"`
	Required   []string                   `json:"required"`
}

// check reports whether d's Schema is one of an object of named params.
func (d *Description) check() error {
	if d == nil || d.Schema == nil {
		return nil
	}
	var s paramsSchema
	if err := json.Unmarshal(d.Schema, &s); err != nil {
		return fmt.Errorf("client: the params schema is not a JSON Schema object: %w", err)
	}
	if s.Type != "" && s.Type != "object" {
		return errors.New(`client: the params schema must be of type "object": its properties are the named params`)
	}
	return nil
}

// ProvideDescribed is [Client.Provide] with a description of the method
// for rpc.discover. A method provided by a pattern is not described
// (rpc.discover lists names).
func (c *Client) ProvideDescribed(ctx context.Context, method string, h peer.Handler, d Description) (*Provision, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	return c.provide(ctx, method, h, &d)
}

// describeMethod applies d to a method object of rpc.discover.
func describeMethod(m openrpc.Method, d *Description) openrpc.Method {
	var obj map[string]any
	if d == nil || json.Unmarshal(m.JSON, &obj) != nil {
		return m
	}
	if d.Summary != "" {
		obj["summary"] = d.Summary
	}
	if d.Description != "" {
		obj["description"] = d.Description
	}
	if d.Schema != nil {
		var s paramsSchema
		_ = json.Unmarshal(d.Schema, &s) // checked by ProvideDescribed
		required := make(map[string]bool, len(s.Required))
		for _, r := range s.Required {
			required[r] = true
		}
		names := make([]string, 0, len(s.Properties))
		for n := range s.Properties {
			names = append(names, n)
		}
		sort.Strings(names)
		params := make([]any, 0, len(names))
		for _, n := range names {
			p := map[string]any{"name": n, "schema": s.Properties[n]}
			if required[n] {
				p["required"] = true
			}
			params = append(params, p)
		}
		obj["params"] = params
		obj["paramStructure"] = "by-name"
	}
	if params, ok := obj["params"].([]any); ok && len(d.Params) > 0 {
		for _, p := range params {
			if p, ok := p.(map[string]any); ok {
				if desc := d.Params[fmt.Sprint(p["name"])]; desc != "" {
					p["description"] = desc
				}
			}
		}
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return m
	}
	return openrpc.Method{Name: m.Name, JSON: b}
}
