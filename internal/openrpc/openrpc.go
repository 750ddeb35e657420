// Package openrpc reads and extends the OpenRPC documents that rpc.discover
// answers, as raw JSON: the hub adds the methods its peers provide to the
// application's document, and the client adds the methods it provides to
// its own.
package openrpc

import (
	"encoding/json"
	"github.com/switchboard-rpc/switchboard/internal/jsonx"
	"sort"
)

// Method is one method object of a document: its name and its whole JSON.
type Method struct {
	Name string
	JSON json.RawMessage
}

// Methods returns the method objects of doc that have a name, in order.
func Methods(doc []byte) ([]Method, error) {
	var d struct {
		Methods []json.RawMessage `json:"methods"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, err
	}
	out := make([]Method, 0, len(d.Methods))
	for _, raw := range d.Methods {
		var m struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(raw, &m) == nil && m.Name != "" {
			out = append(out, Method{Name: m.Name, JSON: raw})
		}
	}
	return out, nil
}

// empty is the document of a peer that serves no method of its own.
const empty = `{"openrpc":"1.3.2","info":{"title":"Switchboard","version":"0.0.0"},"methods":[]}`

// Add returns doc with the methods appended to its list, sorted by name
// after the ones it has; a method whose name doc lists already is left
// out. A nil doc stands for an empty document. The other members of doc
// are kept as they are.
func Add(doc []byte, methods []Method) (json.RawMessage, error) {
	if doc == nil {
		doc = []byte(empty)
	}
	var d map[string]json.RawMessage
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, err
	}
	var list []json.RawMessage
	if raw, ok := d["methods"]; ok {
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, err
		}
	}
	have, err := Methods(doc)
	if err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(have)+len(methods))
	for _, m := range have {
		seen[m.Name] = true
	}
	methods = append([]Method(nil), methods...)
	sort.SliceStable(methods, func(i, j int) bool { return methods[i].Name < methods[j].Name })
	for _, m := range methods {
		if !seen[m.Name] {
			seen[m.Name] = true
			list = append(list, m.JSON)
		}
	}
	if list == nil {
		list = []json.RawMessage{}
	}
	b, err := jsonx.Marshal(list)
	if err != nil {
		return nil, err
	}
	d["methods"] = b
	return jsonx.Marshal(d)
}
