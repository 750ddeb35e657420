package jsonx_test

import (
	"fmt"
	"testing"

	"github.com/switchboard-rpc/switchboard/internal/jsonx"
)

func TestMarshalKeepsHTMLCharacters(t *testing.T) {
	b, err := jsonx.Marshal(map[string]any{"topics": []string{"chat.>", "a<b&c"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"topics":["chat.>","a<b&c"]}`; string(b) != want {
		t.Fatalf("got %s, want %s", b, want)
	}
	if _, err := jsonx.Marshal(func() {}); err == nil {
		t.Fatal("a func encoded")
	}
}

func ExampleMarshal() {
	b, _ := jsonx.Marshal([]string{"chat.>"})
	fmt.Println(string(b))
	// Output: ["chat.>"]
}
