package peer

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
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
		var elem []byte
		n := 0
		eachElement(params, func(e []byte) bool { elem = e; n++; return n < 2 })
		if !isArray || n != 1 {
			return fmt.Errorf("params must be an array of one %s", b.t)
		}
		return json.Unmarshal(elem, dst)
	}
	// Struct.
	if !isArray {
		return json.Unmarshal(params, dst)
	}
	v := reflect.ValueOf(dst).Elem()
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		v = v.Elem()
	}
	n := 0
	var err error
	eachElement(params, func(e []byte) bool {
		if n >= len(b.fields) {
			n++
			return true // keep counting for the error message
		}
		f := v.FieldByIndex(b.fields[n])
		if !setScalar(f, e) {
			if uerr := json.Unmarshal(e, f.Addr().Interface()); uerr != nil {
				err = fmt.Errorf("param %d: %w", n, uerr)
				return false
			}
		}
		n++
		return true
	})
	if err == nil && n > len(b.fields) {
		err = fmt.Errorf("too many params: got %d, want at most %d", n, len(b.fields))
	}
	return err
}

// eachElement calls fn with each element of a valid JSON array until fn
// returns false.
func eachElement(b []byte, fn func(elem []byte) bool) {
	if len(b) == 0 || b[0] != '[' {
		return
	}
	i := skipSpace(b, 1)
	if i < len(b) && b[i] == ']' {
		return
	}
	for i < len(b) {
		end := skipValue(b, i, 1)
		if end < 0 || !fn(b[i:end]) {
			return
		}
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ',' {
			return
		}
		i = skipSpace(b, i+1)
	}
}

// setScalar decodes the common scalar kinds without encoding/json. It
// reports false when it cannot, and encoding/json then decides (and
// produces the error message).
func setScalar(f reflect.Value, e []byte) bool {
	if f.Type().PkgPath() != "" || len(e) == 0 {
		return false // named types may have their own UnmarshalJSON
	}
	switch f.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(string(e), 10, f.Type().Bits())
		if err != nil {
			return false
		}
		f.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := strconv.ParseUint(string(e), 10, f.Type().Bits())
		if err != nil {
			return false
		}
		f.SetUint(n)
	case reflect.Float64, reflect.Float32:
		if e[0] != '-' && !isDigit(e[0]) {
			return false
		}
		x, err := strconv.ParseFloat(string(e), f.Type().Bits())
		if err != nil {
			return false
		}
		f.SetFloat(x)
	case reflect.String:
		if e[0] != '"' {
			return false
		}
		s, ok := unquote(e)
		if !ok {
			return false
		}
		f.SetString(s)
	case reflect.Bool:
		switch string(e) {
		case "true":
			f.SetBool(true)
		case "false":
			f.SetBool(false)
		default:
			return false
		}
	default:
		return false
	}
	return true
}
