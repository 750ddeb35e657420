package openrpc

import (
	"encoding/json"
	"testing"
)

func TestAdd(t *testing.T) {
	doc := []byte(`{"openrpc":"1.3.2","info":{"title":"App","version":"1"},"methods":[{"name":"b"},{"name":"a"}],"x-extra":true}`)
	got, err := Add(doc, []Method{
		{Name: "d", JSON: json.RawMessage(`{"name":"d"}`)},
		{Name: "a", JSON: json.RawMessage(`{"name":"a","dup":true}`)},
		{Name: "c", JSON: json.RawMessage(`{"name":"c"}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"info":{"title":"App","version":"1"},"methods":[{"name":"b"},{"name":"a"},{"name":"c"},{"name":"d"}],"openrpc":"1.3.2","x-extra":true}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}

	got, err = Add(nil, nil)
	if err != nil || string(got) != `{"info":{"title":"Switchboard","version":"0.0.0"},"methods":[],"openrpc":"1.3.2"}` {
		t.Fatalf("empty document: %s, %v", got, err)
	}
	if _, err := Add([]byte(`[1]`), nil); err == nil {
		t.Fatal("an array taken for a document")
	}
}

func TestMethods(t *testing.T) {
	ms, err := Methods([]byte(`{"methods":[{"name":"a","params":[]},{"params":[]},7,{"name":"b"}]}`))
	if err != nil || len(ms) != 2 || ms[0].Name != "a" || string(ms[0].JSON) != `{"name":"a","params":[]}` || ms[1].Name != "b" {
		t.Fatalf("got %+v, %v", ms, err)
	}
}

func TestDescribe(t *testing.T) {
	m := Method{Name: "f", JSON: json.RawMessage(`{"name":"f","params":[{"name":"old"}]}`)}
	got := Describe(m, Description{
		Summary:     "Does f",
		Description: "At length",
		Params:      map[string]string{"b": "The b"},
		Schema:      json.RawMessage(`{"type":"object","properties":{"b":{"type":"string"},"a":{"type":"integer"}},"required":["b"]}`),
	})
	want := `{"description":"At length","name":"f","paramStructure":"by-name","params":[{"name":"a","schema":{"type":"integer"}},{"description":"The b","name":"b","required":true,"schema":{"type":"string"}}],"summary":"Does f"}`
	if got.Name != "f" || string(got.JSON) != want {
		t.Fatalf("got  %s\nwant %s", got.JSON, want)
	}

	// Without a schema the params stay; the named ones get descriptions.
	got = Describe(m, Description{Params: map[string]string{"old": "The old"}})
	if want := `{"name":"f","params":[{"description":"The old","name":"old"}]}`; string(got.JSON) != want {
		t.Fatalf("got  %s\nwant %s", got.JSON, want)
	}
	if bad := (Method{Name: "g", JSON: json.RawMessage(`[1]`)}); string(Describe(bad, Description{Summary: "x"}).JSON) != `[1]` {
		t.Fatal("a method that is not an object was changed")
	}
}
