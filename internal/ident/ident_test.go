package ident

import (
	"strings"
	"testing"
)

func TestWord(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"alice", "alice"},
		{"Bob_2-x", "Bob_2-x"},
		{"", ""},
		{"*", ":2a"},
		{">", ":3e"},
		{"a.b", "a:2eb"},
		{"john.doe@example.com", "john:2edoe:40example:2ecom"},
		{"auth0|abc", "auth0:7cabc"},
		{":2a", ":3a2a"},
		{"a b", "a:20b"},
		{"zoë", "zo:c3:ab"},
		{"{user}", ":7buser:7d"},
	} {
		if got := Word(tt.in); got != tt.want {
			t.Errorf("Word(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if tt.in != "" && !Is(tt.want, tt.in) {
			t.Errorf("Is(%q, %q) = false", tt.want, tt.in)
		}
	}
}

// FuzzWord checks that a word is one topic word and that the mapping is
// injective: decoding gives the identity back.
func FuzzWord(f *testing.F) {
	for _, s := range []string{"alice", "*", "a.b", "auth0|abc", ":", "zoë", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		w := Word(s)
		if Is(w, s) != (s != "") || Is(w+"x", s) || Is(s, s+"x") || Is("", s) {
			t.Fatalf("Is disagrees with Word(%q) = %q", s, w)
		}
		if s == "" {
			if w != "" {
				t.Fatalf("Word(\"\") = %q", w)
			}
			return
		}
		for i := 0; i < len(w); i++ {
			if !plain(w[i]) && w[i] != ':' {
				t.Fatalf("Word(%q) = %q: byte %q is not of a topic word", s, w, w[i])
			}
		}
		if got := decode(t, w); got != s {
			t.Fatalf("Word(%q) = %q decodes to %q", s, w, got)
		}
		if strings.Count(w, ":") != len(s)-countPlain(s) {
			t.Fatalf("Word(%q) = %q escapes the wrong bytes", s, w)
		}
	})
}

func TestIs(t *testing.T) {
	for _, tt := range []struct {
		word, identity string
		want           bool
	}{
		{"alice", "alice", true},
		{"*", "*", false},
		{":2a", "*", true},
		{"a", "a.b", false},
		{"a:2e", "a.b", false},
		{"a:2eb", "a.b", true},
		{"a:2Eb", "a.b", false},
		{"", "", false},
		{"a:2ebx", "a.b", false},
	} {
		if got := Is(tt.word, tt.identity); got != tt.want {
			t.Errorf("Is(%q, %q) = %v, want %v", tt.word, tt.identity, got, tt.want)
		}
	}
}

func countPlain(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if plain(s[i]) {
			n++
		}
	}
	return n
}

func decode(t *testing.T, w string) string {
	var b []byte
	for i := 0; i < len(w); i++ {
		if w[i] != ':' {
			b = append(b, w[i])
			continue
		}
		if i+2 >= len(w) {
			t.Fatalf("%q: truncated escape", w)
		}
		hi, lo := strings.IndexByte(hexDigits, w[i+1]), strings.IndexByte(hexDigits, w[i+2])
		if hi < 0 || lo < 0 {
			t.Fatalf("%q: bad escape", w)
		}
		b = append(b, byte(hi<<4|lo))
		i += 2
	}
	return string(b)
}
