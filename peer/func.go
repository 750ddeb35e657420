package peer

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
)

// Func adapts a typed function to a Handler. P is decoded from the request's
// params, which may come by name or by position:
//
//   - If P is a struct (or a pointer to one), an object binds by JSON field
//     name, as encoding/json does, and an array binds its elements to the
//     struct's fields in declaration order. Extra elements are an error;
//     missing ones leave fields zero.
//   - If P is a slice or an array, the params must be an array, decoded whole.
//   - If P is a map, the params must be an object.
//   - If P is json.RawMessage, it receives the params unchanged.
//   - Otherwise (a number, a string...), the params must be an array of one
//     element, decoded into P.
//
// Omitted params leave P zero. Params that do not fit answer -32602. R is
// encoded as the result. Because Func knows P and R, rpc.discover can
// describe the method with JSON Schemas of both.
func Func[P, R any](fn func(ctx context.Context, params P) (R, error)) Handler {
	var p P
	return &funcHandler[P, R]{fn: fn, bind: newBinder(reflect.TypeOf(&p).Elem())}
}

type funcHandler[P, R any] struct {
	fn   func(context.Context, P) (R, error)
	bind *binder
}

func (f *funcHandler[P, R]) ServeRPC(ctx context.Context, req *Request) (any, error) {
	var p P
	if err := f.bind.bind(req.Params, &p); err != nil {
		return nil, invalidParams(err)
	}
	return f.fn(ctx, p)
}

func (f *funcHandler[P, R]) types() (reflect.Type, reflect.Type) {
	var r R
	return f.bind.t, reflect.TypeOf(&r).Elem()
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// binder decodes params into a value of type t.
type binder struct {
	t      reflect.Type
	kind   bindKind
	fields [][]int // for structs: field indexes in declaration order
}

type bindKind int

const (
	bindStruct bindKind = iota
	bindSlice
	bindMap
	bindRaw
	bindScalar
	bindAny
)

func newBinder(t reflect.Type) *binder {
	b := &binder{t: t}
	base := t
	if base.Kind() == reflect.Pointer {
		base = base.Elem()
	}
	switch {
	case t == rawMessageType:
		b.kind = bindRaw
	case base.Kind() == reflect.Struct:
		b.kind = bindStruct
		b.fields = positionalFields(base)
	case base.Kind() == reflect.Slice, base.Kind() == reflect.Array:
		b.kind = bindSlice
	case base.Kind() == reflect.Map:
		b.kind = bindMap
	case base.Kind() == reflect.Interface:
		b.kind = bindAny
	default:
		b.kind = bindScalar
	}
	return b
}

// positionalFields lists the fields that encoding/json would use, in
// declaration order: exported and not tagged "-".
func positionalFields(t reflect.Type) [][]int {
	var idx [][]int
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() || f.Tag.Get("json") == "-" {
			continue
		}
		idx = append(idx, f.Index)
	}
	return idx
}

// bind decodes params into *dst (dst is a pointer to a value of type b.t).
func (b *binder) bind(params []byte, dst any) error {
	if params == nil {
		return nil
	}
	isArray := params[0] == '['
	switch b.kind {
	case bindRaw:
		*(dst.(*json.RawMessage)) = params
		return nil
	case bindAny:
		return json.Unmarshal(params, dst)
	case bindSlice:
		if !isArray {
			return fmt.Errorf("params must be an array")
		}
		return json.Unmarshal(params, dst)
	case bindMap:
		if isArray {
			return fmt.Errorf("params must be an object")
		}
		return json.Unmarshal(params, dst)
	case bindScalar:
		elems := splitArray(params)
		if !isArray || len(elems) != 1 {
			return fmt.Errorf("params must be an array of one %s", b.t)
		}
		return json.Unmarshal(elems[0], dst)
	}
	// Struct.
	if !isArray {
		return json.Unmarshal(params, dst)
	}
	elems := splitArray(params)
	if len(elems) > len(b.fields) {
		return fmt.Errorf("too many params: got %d, want at most %d", len(elems), len(b.fields))
	}
	v := reflect.ValueOf(dst).Elem()
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		v = v.Elem()
	}
	for i, e := range elems {
		f := v.FieldByIndex(b.fields[i])
		if err := json.Unmarshal(e, f.Addr().Interface()); err != nil {
			return fmt.Errorf("param %d: %w", i, err)
		}
	}
	return nil
}

// splitArray returns the elements of a valid JSON array.
func splitArray(b []byte) [][]byte {
	if len(b) == 0 || b[0] != '[' {
		return nil
	}
	var elems [][]byte
	i := skipSpace(b, 1)
	if i < len(b) && b[i] == ']' {
		return nil
	}
	for i < len(b) {
		end := skipValue(b, i, 1)
		if end < 0 {
			return elems
		}
		elems = append(elems, b[i:end])
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ',' {
			break
		}
		i = skipSpace(b, i+1)
	}
	return elems
}
