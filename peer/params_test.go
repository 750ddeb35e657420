package peer

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"
)

type inner struct {
	Name string `json:"name"`
	Note string `json:"note,omitempty"`
}

type embedded struct {
	Tag string `json:"tag"`
}

type strictParams struct {
	embedded
	ID      int            `json:"id"`
	Limit   *int           `json:"limit"`
	Label   string         `json:"label,omitzero"`
	Owner   inner          `json:"owner"`
	Items   []inner        `json:"items"`
	ByKey   map[string]int `json:"byKey"`
	When    time.Time      `json:"when"`
	Skipped string         `json:"-"`
}

func TestBindStrict(t *testing.T) {
	full := `{"tag":"t","id":1,"owner":{"name":"o"},"items":[{"name":"i"}],"byKey":{"k":1},"when":"2026-01-02T03:04:05Z"}`
	tests := []struct {
		name, params, err string // err "" means it binds
	}{
		{"all required, by name", full, ""},
		{"optional fields present", `{"tag":"t","id":1,"limit":5,"label":"l","owner":{"name":"o","note":"n"},"items":[],"byKey":{},"when":"2026-01-02T03:04:05Z"}`, ""},
		{"names match case-insensitively", `{"TAG":"t","Id":1,"owner":{"NAME":"o"},"items":[],"byKey":{},"when":"2026-01-02T03:04:05Z"}`, ""},
		{"null counts as present", `{"tag":"t","id":1,"owner":{"name":"o"},"items":null,"byKey":null,"when":"2026-01-02T03:04:05Z"}`, ""},
		{"by position, all", `["t",1,null,"l",{"name":"o"},[],{},"2026-01-02T03:04:05Z"]`, ""},
		{"omitted params", ``, `missing param "tag"`},
		{"missing embedded field", `{"id":1,"owner":{"name":"o"},"items":[],"byKey":{},"when":"2026-01-02T03:04:05Z"}`, `missing param "tag"`},
		{"missing top-level field", `{"tag":"t","owner":{"name":"o"},"items":[],"byKey":{},"when":"2026-01-02T03:04:05Z"}`, `missing param "id"`},
		{"missing nested field", `{"tag":"t","id":1,"owner":{},"items":[],"byKey":{},"when":"2026-01-02T03:04:05Z"}`, `missing param "owner.name"`},
		{"missing field in a slice element", `{"tag":"t","id":1,"owner":{"name":"o"},"items":[{"name":"a"},{"note":"b"}],"byKey":{},"when":"2026-01-02T03:04:05Z"}`, `missing param "items[1].name"`},
		{"unknown top-level name", `{"tag":"t","id":1,"owner":{"name":"o"},"items":[],"byKey":{},"when":"2026-01-02T03:04:05Z","idd":2}`, `unknown param "idd"`},
		{"unknown nested name", `{"tag":"t","id":1,"owner":{"name":"o","nmae":"x"},"items":[],"byKey":{},"when":"2026-01-02T03:04:05Z"}`, `unknown param "owner.nmae"`},
		{"a field tagged - is unknown", `{"tag":"t","id":1,"owner":{"name":"o"},"items":[],"byKey":{},"when":"2026-01-02T03:04:05Z","Skipped":"x"}`, `unknown param "Skipped"`},
		{"too few by position", `["t",1,null]`, `missing param "owner"`},
		{"too many by position", `["t",1,null,"l",{"name":"o"},[],{},"2026-01-02T03:04:05Z",9]`, `too many params: got 9, want at most 8`},
		{"nested check by position", `["t",1,null,"l",{"name":"o","x":1},[],{},"2026-01-02T03:04:05Z"]`, `unknown param "owner.x"`},
		{"wrong type by name", `{"tag":"t","id":"one","owner":{"name":"o"},"items":[],"byKey":{},"when":"2026-01-02T03:04:05Z"}`, `param "id": json: cannot unmarshal string into Go value of type int`},
	}
	b := newBinder(reflect.TypeFor[strictParams](), true)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p strictParams
			var params []byte
			if tt.params != "" {
				params = []byte(tt.params)
			}
			err := b.bind(params, &p)
			if got := errText(err); got != tt.err {
				t.Fatalf("bind(%s): error %q, want %q", tt.params, got, tt.err)
			}
		})
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestBindStrictValues(t *testing.T) {
	var p strictParams
	b := newBinder(reflect.TypeFor[strictParams](), true)
	if err := b.bind([]byte(`{"TAG":"t","id":7,"limit":3,"owner":{"name":"o"},"items":[{"name":"i"}],"byKey":{"k":2},"when":"2026-01-02T03:04:05Z"}`), &p); err != nil {
		t.Fatal(err)
	}
	if p.Tag != "t" || p.ID != 7 || p.Limit == nil || *p.Limit != 3 || p.Owner.Name != "o" || len(p.Items) != 1 || p.ByKey["k"] != 2 || p.When.Year() != 2026 {
		t.Fatalf("bound %+v", p)
	}
}

// TestBindStringOption checks that a struct with a field tagged ",string"
// still binds by name as encoding/json does, with the same checks.
func TestBindStringOption(t *testing.T) {
	type params struct {
		N int    `json:"n,string"`
		S string `json:"s"`
	}
	b := newBinder(reflect.TypeFor[params](), true)
	var p params
	if err := b.bind([]byte(`{"n":"42","s":"x"}`), &p); err != nil || p.N != 42 || p.S != "x" {
		t.Fatalf("bound %+v, %v", p, err)
	}
	if err := b.bind([]byte(`{"n":"42"}`), &p); errText(err) != `missing param "s"` {
		t.Fatalf("missing s: %v", err)
	}
	if err := b.bind([]byte(`{"n":"42","s":"x","t":1}`), &p); errText(err) != `unknown param "t"` {
		t.Fatalf("unknown t: %v", err)
	}
}

func TestAllowUnknownFields(t *testing.T) {
	h := AllowUnknownFields(Func(func(_ context.Context, p strictParams) (int, error) { return p.ID, nil }))
	req := &Request{Method: "m", Params: json.RawMessage(`{"tag":"t","id":4,"extra":1,"owner":{"name":"o","more":2},"items":[],"byKey":{},"when":"2026-01-02T03:04:05Z"}`)}
	got, err := h.ServeRPC(t.Context(), req)
	if err != nil || got != 4 {
		t.Fatalf("got %v, %v; want 4 with unknown names ignored", got, err)
	}
	// Required fields still are.
	req.Params = json.RawMessage(`{"id":4,"extra":1}`)
	if _, err := h.ServeRPC(t.Context(), req); ToError(err).Code != CodeInvalidParams || string(ToError(err).Data) != `"missing param \"tag\""` {
		t.Fatalf("got %v (data %s), want a missing tag", err, ToError(err).Data)
	}
	// Other handlers come back as they were.
	raw := HandlerFunc(func(context.Context, *Request) (any, error) { return nil, nil })
	if reflect.ValueOf(AllowUnknownFields(raw)).Pointer() != reflect.ValueOf(raw).Pointer() {
		t.Fatal("AllowUnknownFields changed a handler it does not know")
	}
}

// TestDiscoverStatesBindingRules checks that the rpc.discover document
// describes exactly what the binder enforces: the required params, and
// whether unknown names are refused.
func TestDiscoverStatesBindingRules(t *testing.T) {
	m := NewMux()
	m.Handle("strict", Func(func(context.Context, strictParams) (int, error) { return 0, nil }))
	m.Handle("lenient", AllowUnknownFields(Func(func(context.Context, strictParams) (int, error) { return 0, nil })))
	doc, err := m.discover(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, meth := range doc.(openRPC).Methods {
		var required []string
		for _, p := range meth.Params {
			if p.Required {
				required = append(required, p.Name)
			}
		}
		if want := []string{"tag", "id", "owner", "items", "byKey", "when"}; !slices.Equal(required, want) {
			t.Errorf("%s: required %v, want %v", meth.Name, required, want)
		}
		owner := meth.Params[4].Schema
		if !slices.Equal(owner["required"].([]string), []string{"name"}) {
			t.Errorf("%s: owner schema requires %v", meth.Name, owner["required"])
		}
		if got, want := owner["additionalProperties"] == false, meth.Name == "strict"; got != want {
			t.Errorf("%s: owner schema additionalProperties false = %v, want %v", meth.Name, got, want)
		}
	}
}

// FuzzBind feeds arbitrary params to the binder of a nested type. It must
// never panic, and strictness only ever refuses more: what binds strictly
// binds leniently to the same value.
func FuzzBind(f *testing.F) {
	for _, s := range []string{
		`{"tag":"t","id":1,"owner":{"name":"o"},"items":[{"name":"i"}],"byKey":{"k":1},"when":"2026-01-02T03:04:05Z"}`,
		`["t",1,null,"l",{"name":"o"},[],{},"2026-01-02T03:04:05Z"]`,
		`{"owner":{"nmae":1}}`, `[1,2,3,4,5,6,7,8,9]`, `{}`, `[]`, `{"items":[{},{"name":null}]}`,
	} {
		f.Add([]byte(s))
	}
	strict := newBinder(reflect.TypeFor[strictParams](), true)
	lenient := newBinder(reflect.TypeFor[strictParams](), false)
	f.Fuzz(func(t *testing.T, params []byte) {
		if !validJSON(params) || (params[0] != '{' && params[0] != '[') {
			return // the parser hands the binder only arrays and objects
		}
		var a, b strictParams
		errStrict := strict.bind(params, &a)
		errLenient := lenient.bind(params, &b)
		if errStrict == nil && (errLenient != nil || !reflect.DeepEqual(a, b)) {
			t.Fatalf("%s: strict bound %+v, lenient %+v (%v)", params, a, b, errLenient)
		}
	})
}

func BenchmarkBind(b *testing.B) {
	type params struct {
		Minuend    float64 `json:"minuend"`
		Subtrahend float64 `json:"subtrahend"`
	}
	bd := newBinder(reflect.TypeFor[params](), true)
	for _, in := range []struct{ name, params string }{
		{"ByPosition", `[42,23]`},
		{"ByName", `{"subtrahend":23,"minuend":42}`},
	} {
		b.Run(in.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var p params
				if err := bd.bind([]byte(in.params), &p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
