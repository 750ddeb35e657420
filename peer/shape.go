package peer

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// This file holds the strict checks behind [Func]'s params: which fields a
// struct has, which are required, and a walk over a JSON value that finds
// missing and unknown names at every level before encoding/json decodes it.

// A structShape lists the fields of a struct type that encoding/json
// reads, in declaration order, with embedded structs flattened where
// encoding/json flattens them.
type structShape struct {
	fields   []fieldShape
	byName   map[string]int // index in fields, by JSON name
	required int            // index just past the last required field
	plain    bool           // no field needs encoding/json's ",string" option
}

type fieldShape struct {
	index    []int
	name     string // JSON name
	key      []byte // name, for case-insensitive matches without allocating
	t        reflect.Type
	required bool // not a pointer, not tagged omitempty or omitzero
	check    bool // the value may hold structs to check
}

var shapes sync.Map // reflect.Type -> *structShape

// shapeOf returns the shape of struct type t, computed once per type.
func shapeOf(t reflect.Type) *structShape {
	if s, ok := shapes.Load(t); ok {
		return s.(*structShape)
	}
	s := &structShape{byName: map[string]int{}, plain: true}
	var walk func(t reflect.Type, index []int)
	walk = func(t reflect.Type, index []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			idx := append(index[:len(index):len(index)], i)
			if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
				walk(f.Type, idx) // promoted fields, as encoding/json reads them
				continue
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			if hasOpt(opts, "string") {
				s.plain = false
			}
			if _, dup := s.byName[name]; dup {
				continue // the shallower field wins, as in encoding/json
			}
			s.byName[name] = len(s.fields)
			s.fields = append(s.fields, fieldShape{
				index:    idx,
				name:     name,
				key:      []byte(name),
				t:        f.Type,
				required: f.Type.Kind() != reflect.Pointer && !hasOpt(opts, "omitempty") && !hasOpt(opts, "omitzero"),
				check:    holdsStructs(f.Type),
			})
		}
	}
	walk(t, nil)
	for i, f := range s.fields {
		if f.required {
			s.required = i + 1
		}
	}
	v, _ := shapes.LoadOrStore(t, s)
	return v.(*structShape)
}

func hasOpt(opts, opt string) bool {
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		if o == opt {
			return true
		}
	}
	return false
}

// field finds the field that the raw JSON key (quotes included) binds
// to: an exact match, or else a case-insensitive one, as encoding/json
// does. It returns the key's text too, for errors.
func (s *structShape) field(key []byte) (f *fieldShape, i int, name string) {
	inner := key[1 : len(key)-1]
	if bytes.IndexByte(inner, '\\') >= 0 {
		name, _ = unquote(key)
		inner = []byte(name)
	}
	if i, ok := s.byName[string(inner)]; ok {
		return &s.fields[i], i, name
	}
	for i := range s.fields {
		if bytes.EqualFold(s.fields[i].key, inner) {
			return &s.fields[i], i, name
		}
	}
	if name == "" {
		name = string(inner)
	}
	return nil, -1, name
}

// members walks the members of the JSON object v bound to the struct,
// calling fn for each one that matches a field, refusing unknown names
// when strict, and then fields that are required and missing. path names
// v in errors.
func (s *structShape) members(v []byte, strict bool, path string, fn func(f *fieldShape, val []byte) error) error {
	var seen uint64 // fields present, for the first 64 fields
	var seenMore map[int]bool
	var err error
	eachMember(v, func(key, val []byte) bool {
		f, i, name := s.field(key)
		if f == nil {
			if strict {
				err = fmt.Errorf("unknown param %q", joinPath(path, name))
			}
			return err == nil
		}
		if i < 64 {
			seen |= 1 << i
		} else {
			if seenMore == nil {
				seenMore = map[int]bool{}
			}
			seenMore[i] = true
		}
		err = fn(f, val)
		return err == nil
	})
	if err != nil {
		return err
	}
	for i := range s.required {
		if s.fields[i].required && (i < 64 && seen&(1<<i) == 0 || i >= 64 && !seenMore[i]) {
			return fmt.Errorf("missing param %q", joinPath(path, s.fields[i].name))
		}
	}
	return nil
}

// missing reports the first required field at or after position from.
func (s *structShape) missing(from int, path string) error {
	for _, f := range s.fields[from:] {
		if f.required {
			return fmt.Errorf("missing param %q", joinPath(path, f.name))
		}
	}
	return nil
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// decodesItself reports whether values of t decode themselves from JSON
// (a json.Unmarshaler or encoding.TextUnmarshaler, or time.Time), so their
// fields are not checked.
func decodesItself(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return t == rawMessageType || t == timeType ||
		p.Implements(jsonUnmarshalerType) || p.Implements(textUnmarshalerType)
}

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// holdsStructs reports whether a value of type t may contain a struct
// whose fields checkValue checks. Scalars, and containers of them, need
// no second look.
func holdsStructs(t reflect.Type) bool {
	return holdsStructsSeen(t, map[reflect.Type]bool{})
}

func holdsStructsSeen(t reflect.Type, seen map[reflect.Type]bool) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if seen[t] || decodesItself(t) {
		return false // a cycle through containers holds no struct
	}
	switch t.Kind() {
	case reflect.Struct:
		return true
	case reflect.Slice, reflect.Array, reflect.Map:
		seen[t] = true
		return holdsStructsSeen(t.Elem(), seen)
	}
	return false
}

// checkValue checks the JSON value v against type t before encoding/json
// decodes it: every object bound to a struct has the struct's required
// fields and, when strict, no member matching no field. path names v in
// errors. Type mismatches are left to encoding/json, which reports them.
func checkValue(t reflect.Type, v []byte, strict bool, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if len(v) == 0 || decodesItself(t) {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		if v[0] != '{' {
			return nil
		}
		return shapeOf(t).members(v, strict, path, func(f *fieldShape, val []byte) error {
			if !f.check {
				return nil
			}
			return checkValue(f.t, val, strict, joinPath(path, f.name))
		})
	case reflect.Slice, reflect.Array:
		if v[0] != '[' {
			return nil
		}
		n := 0
		var err error
		eachElement(v, func(e []byte) bool {
			err = checkValue(t.Elem(), e, strict, path+"["+strconv.Itoa(n)+"]")
			n++
			return err == nil
		})
		return err
	case reflect.Map:
		if v[0] != '{' {
			return nil
		}
		var err error
		eachMember(v, func(key, val []byte) bool {
			name, _ := unquote(key)
			err = checkValue(t.Elem(), val, strict, joinPath(path, name))
			return err == nil
		})
		return err
	}
	return nil
}

// eachMember calls fn with the raw key (quotes included) and value of each
// member of a valid JSON object until fn returns false.
func eachMember(b []byte, fn func(key, val []byte) bool) {
	if len(b) == 0 || b[0] != '{' {
		return
	}
	i := skipSpace(b, 1)
	for i < len(b) && b[i] == '"' {
		end := skipString(b, i)
		if end < 0 {
			return
		}
		key := b[i:end]
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return
		}
		i = skipSpace(b, i+1)
		end = skipValue(b, i, 1)
		if end < 0 || !fn(key, b[i:end]) {
			return
		}
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ',' {
			return
		}
		i = skipSpace(b, i+1)
	}
}
