package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

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

// check reports whether d's Schema is one of an object of named params.
func (d *Description) check() error {
	if d == nil || d.Schema == nil {
		return nil
	}
	var s struct {
		Type string `json:"type"`
	}
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
	if d == nil {
		return m
	}
	return openrpc.Describe(m, openrpc.Description(*d))
}
