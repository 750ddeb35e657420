package hub

import (
	"encoding/json"
	"testing"
)

// TestReadParams: params by name fill the named target, params by position
// the positional one, and any other params leave both as they are, so that
// each method refuses what it misses.
func TestReadParams(t *testing.T) {
	type named struct {
		Topic string `json:"topic"`
	}
	for _, tc := range []struct {
		params     string
		noPos      bool // no positional target
		form       paramsForm
		err        bool
		topic      string
		positional []string
	}{
		{params: ``, form: paramsAbsent},
		{params: `null`, form: paramsAbsent},
		{params: " \n\tnull", form: paramsAbsent},
		{params: `{"topic": "a.b"}`, form: paramsByName, topic: "a.b"},
		{params: " \r\n{\"topic\": \"a.b\"}", form: paramsByName, topic: "a.b"},
		{params: `{"topic": 1}`, form: paramsByName, err: true},
		{params: `["a.b", "c"]`, form: paramsByPosition, positional: []string{"a.b", "c"}},
		{params: `[1]`, form: paramsByPosition, err: true},
		{params: `["a.b"]`, noPos: true, form: paramsByPosition},
		{params: `"a.b"`, form: paramsScalar},
		{params: `12`, form: paramsScalar},
		{params: `true`, form: paramsScalar},
	} {
		var n named
		var p []string
		var pos any = &p
		if tc.noPos {
			pos = nil
		}
		form, err := readParams(json.RawMessage(tc.params), &n, pos)
		if form != tc.form || (err != nil) != tc.err {
			t.Errorf("readParams(%q) = %d, %v; want %d, error %v", tc.params, form, err, tc.form, tc.err)
			continue
		}
		if tc.err {
			continue
		}
		if n.Topic != tc.topic || len(p) != len(tc.positional) {
			t.Errorf("readParams(%q) decoded %q and %q; want %q and %q", tc.params, n.Topic, p, tc.topic, tc.positional)
			continue
		}
		for i := range p {
			if p[i] != tc.positional[i] {
				t.Errorf("readParams(%q) decoded %q; want %q", tc.params, p, tc.positional)
			}
		}
	}
}
