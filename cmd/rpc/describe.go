package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/switchboard-rpc/switchboard/client"
	"github.com/switchboard-rpc/switchboard/internal/openrpc"
	"github.com/switchboard-rpc/switchboard/peer"
)

// This file describes the methods serve and provide answer, for
// rpc.discover (and so for the hub's MCP tools): -describe METHOD=TEXT and
// -params METHOD=SCHEMA.

// describeFlags adds -describe and -params to a command.
func describeFlags(o *cli) {
	o.fs.Var(&o.describe, "describe", "describe `METHOD=TEXT` in rpc.discover: what it does (repeatable; an MCP tool's description)")
	o.fs.Var(&o.schemas, "params", `give the JSON Schema of METHOD's params object, `+"`METHOD=SCHEMA`"+`, as {"type":"object","properties":{...},"required":[...]} (repeatable; an MCP tool's input schema)`)
}

// descriptions returns the Description of each of names that -describe
// or -params gives, checking that they name those methods.
func (o *cli) descriptions(names []string) (map[string]client.Description, error) {
	out := make(map[string]client.Description)
	known := func(flag, spec string) (string, string, error) {
		name, v, _ := strings.Cut(spec, "=")
		for _, n := range names {
			if n == name {
				if strings.ContainsAny(name, "*>") {
					return "", "", usagef("-%s %s: a pattern is not described (rpc.discover lists names)", flag, name)
				}
				return name, v, nil
			}
		}
		return "", "", usagef("-%s %s: no METHOD=COMMAND of that name", flag, name)
	}
	for _, spec := range o.describe {
		name, text, err := known("describe", spec)
		if err != nil {
			return nil, err
		}
		d := out[name]
		d.Summary = text
		out[name] = d
	}
	for _, spec := range o.schemas {
		name, schema, err := known("params", spec)
		if err != nil {
			return nil, err
		}
		var s struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal([]byte(schema), &s); err != nil || s.Type != "" && s.Type != "object" {
			return nil, usagef(`-params %s: want the JSON Schema of an object, {"type":"object","properties":{...}}`, name)
		}
		d := out[name]
		d.Schema = json.RawMessage(schema)
		out[name] = d
	}
	return out, nil
}

// describedRouter is serve's Router: rpc.discover gets the descriptions.
type describedRouter struct {
	peer.Router
	docs map[string]client.Description
}

func (r describedRouter) Lookup(method string) (peer.Handler, peer.Mode) {
	h, mode := r.Router.Lookup(method)
	if method != "rpc.discover" || h == nil || len(r.docs) == 0 {
		return h, mode
	}
	return peer.HandlerFunc(func(ctx context.Context, req *peer.Request) (any, error) {
		res, err := h.ServeRPC(ctx, req)
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(res)
		if err != nil {
			return nil, err
		}
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			return nil, err
		}
		methods, _ := doc["methods"].([]any)
		for _, m := range methods {
			if m, ok := m.(map[string]any); ok {
				if d, ok := r.docs[fmt.Sprint(m["name"])]; ok {
					openrpc.DescribeObject(m, openrpc.Description(d))
				}
			}
		}
		return doc, nil
	}), mode
}
