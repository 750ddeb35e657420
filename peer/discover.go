package peer

import (
	"context"
	"encoding"
	"reflect"
	"time"
)

// The rpc.discover document follows OpenRPC 1.3 (https://spec.open-rpc.org).
// Only the parts a client needs to call a method are filled in: names,
// parameters with their JSON Schemas, and results.

type openRPC struct {
	OpenRPC string          `json:"openrpc"`
	Info    openRPCInfo     `json:"info"`
	Methods []openRPCMethod `json:"methods"`
}

type openRPCInfo struct {
	Title   string `json:"title"`
	Version string `json:"version"`
}

type openRPCMethod struct {
	Name           string              `json:"name"`
	Summary        string              `json:"summary,omitempty"`
	ParamStructure string              `json:"paramStructure"`
	Params         []contentDescriptor `json:"params"`
	Result         *contentDescriptor  `json:"result,omitempty"`
}

type contentDescriptor struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
	Schema      schema `json:"schema"`
}

// Doc documents a method in rpc.discover, beside the schemas its
// handler gives: a one-line summary, and a description of each parameter
// by its name in the document.
type Doc struct {
	Summary string
	Params  map[string]string
}

// schema is a JSON Schema, built as a map so that only the keys that apply
// are present.
type schema = map[string]any

func (m *Mux) discover(context.Context, *Request) (any, error) {
	doc := openRPC{
		OpenRPC: "1.3.2",
		Info:    openRPCInfo{Title: m.Title, Version: m.Version},
		Methods: []openRPCMethod{},
	}
	if doc.Info.Title == "" {
		doc.Info.Title = "Switchboard"
	}
	if doc.Info.Version == "" {
		doc.Info.Version = "0.0.0"
	}
	methods := m.load()
	for _, name := range m.Methods() {
		e := methods[name]
		meth := describe(name, e.h)
		if e.doc != nil {
			meth.Summary = e.doc.Summary
			for i := range meth.Params {
				meth.Params[i].Description = e.doc.Params[meth.Params[i].Name]
			}
		}
		doc.Methods = append(doc.Methods, meth)
	}
	return doc, nil
}

// describe documents one method. Handlers that are not [Func] take any
// params and return anything.
func describe(name string, h Handler) openRPCMethod {
	meth := openRPCMethod{Name: name, ParamStructure: "either", Params: []contentDescriptor{}}
	d, ok := h.(describer)
	if !ok {
		meth.Result = &contentDescriptor{Name: "result", Schema: schema{}}
		return meth
	}
	pt, rt := d.types()
	strict := true
	if s, ok := d.(interface{ strictFields() bool }); ok {
		strict = s.strictFields()
	}
	meth.Result = &contentDescriptor{Name: "result", Schema: schemaOf(rt, false, nil)}
	base := pt
	if base.Kind() == reflect.Pointer {
		base = base.Elem()
	}
	switch {
	case pt == rawMessageType || base.Kind() == reflect.Interface:
		meth.Params = append(meth.Params, contentDescriptor{Name: "params", Schema: schema{}})
	case base.Kind() == reflect.Struct && !isSpecial(base):
		for _, f := range shapeOf(base).fields {
			meth.Params = append(meth.Params, contentDescriptor{
				Name:     f.name,
				Required: f.required,
				Schema:   schemaOf(f.t, strict, nil),
			})
		}
	case base.Kind() == reflect.Slice || base.Kind() == reflect.Array:
		meth.ParamStructure = "by-position"
		meth.Params = append(meth.Params, contentDescriptor{Name: "params", Schema: schemaOf(base.Elem(), strict, nil)})
	case base.Kind() == reflect.Map:
		meth.ParamStructure = "by-name"
		meth.Params = append(meth.Params, contentDescriptor{Name: "params", Schema: schemaOf(base, strict, nil)})
	default:
		meth.ParamStructure = "by-position"
		meth.Params = append(meth.Params, contentDescriptor{Name: "value", Required: true, Schema: schemaOf(base, strict, nil)})
	}
	return meth
}

var (
	timeType          = reflect.TypeFor[time.Time]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

func isSpecial(t reflect.Type) bool {
	return t == timeType || t.Implements(textMarshalerType) || reflect.PointerTo(t).Implements(textMarshalerType)
}

// schemaOf derives a JSON Schema from a Go type, the way encoding/json would
// encode it and [Func] binds it: a struct's required fields are listed, and
// strict says that other names are refused. seen breaks cycles in
// recursive types.
func schemaOf(t reflect.Type, strict bool, seen map[reflect.Type]bool) schema {
	if t == rawMessageType {
		return schema{}
	}
	if t.Kind() == reflect.Pointer {
		return schemaOf(t.Elem(), strict, seen)
	}
	switch {
	case t == timeType:
		return schema{"type": "string", "format": "date-time"}
	case isSpecial(t):
		return schema{"type": "string"}
	}
	switch t.Kind() {
	case reflect.Bool:
		return schema{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return schema{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return schema{"type": "number"}
	case reflect.String:
		return schema{"type": "string"}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return schema{"type": "string", "contentEncoding": "base64"}
		}
		return schema{"type": "array", "items": schemaOf(t.Elem(), strict, seen)}
	case reflect.Map:
		return schema{"type": "object", "additionalProperties": schemaOf(t.Elem(), strict, seen)}
	case reflect.Struct:
		if seen[t] {
			return schema{"type": "object"} // recursive: stop here
		}
		if seen == nil {
			seen = map[reflect.Type]bool{}
		}
		seen[t] = true
		defer delete(seen, t)
		props := schema{}
		var required []string
		for _, f := range shapeOf(t).fields {
			props[f.name] = schemaOf(f.t, strict, seen)
			if f.required {
				required = append(required, f.name)
			}
		}
		s := schema{"type": "object", "properties": props}
		if len(required) > 0 {
			s["required"] = required
		}
		if strict {
			s["additionalProperties"] = false
		}
		return s
	}
	return schema{} // interfaces and anything else: any value
}
