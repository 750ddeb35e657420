package openrpc

import (
	"encoding/json"
	"fmt"
	"sort"
)

// Description is what a peer says of a method it serves, beyond its name:
// the fields of client.Description, which converts to it.
type Description struct {
	Summary     string
	Description string
	Params      map[string]string
	Schema      json.RawMessage
}

// Describe returns m with d applied, as [DescribeObject] does; m as it is
// when its JSON is not an object.
func Describe(m Method, d Description) Method {
	var obj map[string]any
	if json.Unmarshal(m.JSON, &obj) != nil {
		return m
	}
	DescribeObject(obj, d)
	b, err := json.Marshal(obj)
	if err != nil {
		return m
	}
	return Method{Name: m.Name, JSON: b}
}

// DescribeObject applies d to the method object m: its summary and
// description when d has them; when d has a Schema (a JSON Schema object,
// checked by the caller), one by-name param for each of its properties,
// sorted by name, required as it says; then the description of each param
// that d.Params names.
func DescribeObject(m map[string]any, d Description) {
	if d.Summary != "" {
		m["summary"] = d.Summary
	}
	if d.Description != "" {
		m["description"] = d.Description
	}
	if d.Schema != nil {
		var s struct {
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		}
		_ = json.Unmarshal(d.Schema, &s)
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
		m["params"], m["paramStructure"] = params, "by-name"
	}
	if params, ok := m["params"].([]any); ok && len(d.Params) > 0 {
		for _, p := range params {
			if p, ok := p.(map[string]any); ok {
				if desc := d.Params[fmt.Sprint(p["name"])]; desc != "" {
					p["description"] = desc
				}
			}
		}
	}
}
