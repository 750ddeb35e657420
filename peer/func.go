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
//     struct's fields in declaration order (fields of embedded structs
//     count where encoding/json would flatten them).
//   - If P is a slice or an array, the params must be an array, decoded whole.
//   - If P is a map, the params must be an object.
//   - If P is json.RawMessage, it receives the params unchanged.
//   - Otherwise (a number, a string...), the params must be an array of one
//     element, decoded into P.
//
// Params are checked strictly, at every level of nesting: a struct field is
// required unless it is a pointer or tagged omitempty or omitzero, and a
// name that matches no field is refused (see [AllowUnknownFields] to ignore
// such names instead). Too many positional params, too few for the
// required fields, a missing required field, an unknown name or a value of
// the wrong type answer -32602, with data naming the param. R is encoded as
// the result. Because Func knows P and R, rpc.discover describes the
// method with JSON Schemas of both, stating the same rules.
func Func[P, R any](fn func(ctx context.Context, params P) (R, error)) Handler {
	var p P
	return newFunc(fn, newBinder(reflect.TypeOf(&p).Elem(), true))
}

// newFunc returns Func's handler: a rawFunc when R is json.RawMessage.
func newFunc[P, R any](fn func(context.Context, P) (R, error), bind *binder) Handler {
	f := &funcHandler[P, R]{fn: fn, bind: bind}
	if _, ok := any(*new(R)).(json.RawMessage); ok {
		return &rawFunc[P, R]{f}
	}
	return f
}

// AllowUnknownFields returns a copy of h, a handler made by [Func], that
// ignores names in the params matching no field, at any level, as
// encoding/json does, instead of refusing them. Missing required fields are
// still refused. Use it for methods whose callers may send fields that a
// newer version of the method will understand. Any other handler is
// returned unchanged: it decodes its params itself.
func AllowUnknownFields(h Handler) Handler {
	if f, ok := h.(interface{ lenient() Handler }); ok {
		return f.lenient()
	}
	return h
}

type funcHandler[P, R any] struct {
	fn   func(context.Context, P) (R, error)
	bind *binder
}

func (f *funcHandler[P, R]) ServeRPC(ctx context.Context, req *Request) (any, error) {
	return f.serve(ctx, req)
}

func (f *funcHandler[P, R]) serve(ctx context.Context, req *Request) (R, error) {
	if f.bind.kind == bindRaw {
		// P is json.RawMessage: no value of P to allocate for the binder.
		p, _ := any(req.Params).(P)
		return f.fn(ctx, p)
	}
	var p P
	if err := f.bind.bind(req.Params, &p); err != nil {
		var r R
		return r, invalidParams(err)
	}
	return f.fn(ctx, p)
}

// rawFunc is the handler of a Func whose R is json.RawMessage: its
// results go into replies as they are (see rawServer).
type rawFunc[P, R any] struct{ *funcHandler[P, R] }

func (f *rawFunc[P, R]) serveRaw(ctx context.Context, req *Request) (json.RawMessage, error) {
	r, err := f.serve(ctx, req)
	raw, _ := any(r).(json.RawMessage)
	return raw, err
}

func (f *rawFunc[P, R]) lenient() Handler {
	return newFunc(f.fn, newBinder(f.bind.t, false))
}

func (f *funcHandler[P, R]) types() (reflect.Type, reflect.Type) {
	var r R
	return f.bind.t, reflect.TypeOf(&r).Elem()
}

func (f *funcHandler[P, R]) strictFields() bool { return f.bind.strict }

func (f *funcHandler[P, R]) lenient() Handler {
	return newFunc(f.fn, newBinder(f.bind.t, false))
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// binder decodes params into a value of type t.
type binder struct {
	t      reflect.Type
	kind   bindKind
	strict bool         // names matching no field are an error
	shape  *structShape // for structs
	check  bool         // values may hold structs to check (see checkValue)
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

func newBinder(t reflect.Type, strict bool) *binder {
	b := &binder{t: t, strict: strict}
	base := t
	if base.Kind() == reflect.Pointer {
		base = base.Elem()
	}
	switch {
	case t == rawMessageType:
		b.kind = bindRaw
	case base.Kind() == reflect.Struct && !decodesItself(base):
		b.kind = bindStruct
		b.shape = shapeOf(base)
	case base.Kind() == reflect.Slice, base.Kind() == reflect.Array:
		b.kind = bindSlice
	case base.Kind() == reflect.Map:
		b.kind = bindMap
	case base.Kind() == reflect.Interface:
		b.kind = bindAny
	default:
		b.kind = bindScalar
	}
	b.check = holdsStructs(base)
	return b
}

// bind decodes params into *dst (dst is a pointer to a value of type b.t).
func (b *binder) bind(params []byte, dst any) error {
	if params == nil {
		switch {
		case b.kind == bindScalar:
			return fmt.Errorf("params must be an array of one %s", b.t)
		case b.kind == bindStruct && b.shape.required > 0:
			return b.shape.missing(0, "")
		}
		return nil
	}
	isArray := params[0] == '['
	switch b.kind {
	case bindRaw:
		*(dst.(*json.RawMessage)) = params
		return nil
	case bindAny:
		return json.Unmarshal(params, dst)
	case bindSlice, bindMap:
		if isArray != (b.kind == bindSlice) {
			if isArray {
				return fmt.Errorf("params must be an object")
			}
			return fmt.Errorf("params must be an array")
		}
		if b.check {
			if err := checkValue(b.t, params, b.strict, ""); err != nil {
				return err
			}
		}
		return json.Unmarshal(params, dst)
	case bindScalar:
		var elem []byte
		n := 0
		eachElement(params, func(e []byte) bool { elem = e; n++; return n < 2 })
		if !isArray || n != 1 {
			return fmt.Errorf("params must be an array of one %s", b.t)
		}
		if b.check {
			if err := checkValue(b.t, elem, b.strict, "0"); err != nil {
				return err
			}
		}
		return json.Unmarshal(elem, dst)
	}
	// Struct.
	v := reflect.ValueOf(dst).Elem()
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		v = v.Elem()
	}
	if !isArray {
		if !b.shape.plain {
			if err := checkValue(b.t, params, b.strict, ""); err != nil {
				return err
			}
			return json.Unmarshal(params, dst)
		}
		return b.shape.members(params, b.strict, "", func(fi *fieldShape, e []byte) error {
			return b.setField(v, fi, e, fi.name)
		})
	}
	fields := b.shape.fields
	n := 0
	var err error
	eachElement(params, func(e []byte) bool {
		if n < len(fields) {
			err = b.setField(v, &fields[n], e, strconv.Itoa(n))
		}
		n++ // past the fields, keep counting for the error message
		return err == nil
	})
	switch {
	case err != nil:
		return err
	case n > len(fields):
		return fmt.Errorf("too many params: got %d, want at most %d", n, len(fields))
	case n < b.shape.required:
		return b.shape.missing(n, "")
	}
	return nil
}

// setField decodes e into the field fi of struct v. name is how errors
// name the param: its position or its JSON name.
func (b *binder) setField(v reflect.Value, fi *fieldShape, e []byte, name string) error {
	f := v.FieldByIndex(fi.index)
	if setScalar(f, e) {
		return nil
	}
	if fi.check {
		if err := checkValue(fi.t, e, b.strict, fi.name); err != nil {
			return err
		}
	}
	if err := json.Unmarshal(e, f.Addr().Interface()); err != nil {
		if name == fi.name {
			name = strconv.Quote(name)
		}
		return fmt.Errorf("param %s: %w", name, err)
	}
	return nil
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
