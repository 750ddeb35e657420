package hub

import (
	"slices"
	"strings"
	"testing"
)

func TestValidTopic(t *testing.T) {
	tests := []struct {
		topic          string
		publish, subOK bool
	}{
		{"news", true, true},
		{"chat.room1", true, true},
		{"a_b-c:d.E9", true, true},
		{"chat.*", false, true},
		{"chat.>", false, true},
		{"*.x.>", false, true},
		{"*", false, true},
		{">", false, true},
		{"", false, false},
		{".", false, false},
		{"a.", false, false},
		{".a", false, false},
		{"a..b", false, false},
		{"a.>.b", false, false},
		{"a.b*", false, false},
		{"a.>>", false, false},
		{"a b", false, false},
		{"a/b", false, false},
		{`a"b`, false, false},
		{"é", false, false},
		{strings.Repeat("a", DefaultMaxTopicLength), true, true},
		{strings.Repeat("a", DefaultMaxTopicLength+1), false, false},
	}
	for _, tt := range tests {
		if got := validTopic(tt.topic, false, DefaultMaxTopicLength); got != tt.publish {
			t.Errorf("validTopic(%q, publish) = %v, want %v", tt.topic, got, tt.publish)
		}
		if got := validTopic(tt.topic, true, DefaultMaxTopicLength); got != tt.subOK {
			t.Errorf("validTopic(%q, subscribe) = %v, want %v", tt.topic, got, tt.subOK)
		}
	}
}

func TestMatch(t *testing.T) {
	patterns := []string{"a", "a.b", "a.*", "a.>", "*.b", ">", "a.b.c", "a.*.c", "*", "b.>"}
	tests := []struct {
		topic string
		want  []string
	}{
		{"a", []string{"a", ">", "*"}},
		{"a.b", []string{"a.b", "a.*", "a.>", "*.b", ">"}},
		{"a.c", []string{"a.*", "a.>", ">"}},
		{"a.b.c", []string{"a.>", ">", "a.b.c", "a.*.c"}},
		{"a.x.c", []string{"a.>", ">", "a.*.c"}},
		{"b", []string{">", "*"}},
		{"b.b", []string{"*.b", ">", "b.>"}},
		{"c.d.e", []string{">"}},
	}
	var root node
	peers := map[*Peer]string{}
	for _, pat := range patterns {
		p := &Peer{id: pat}
		peers[p] = pat
		root.insert(p, pat)
	}
	for _, tt := range tests {
		var got []string
		for _, n := range root.match(nil, tt.topic) {
			for _, s := range n.subs {
				got = append(got, peers[s.p])
			}
		}
		slices.Sort(got)
		want := slices.Clone(tt.want)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("match(%q) = %q, want %q", tt.topic, got, want)
		}
	}
}

func TestRemovePrunes(t *testing.T) {
	var root node
	a, b := &Peer{id: "a"}, &Peer{id: "b"}
	s1 := root.insert(a, "x.y.z")
	s2 := root.insert(b, "x.y.z")
	s3 := root.insert(a, "x.*")
	s1.remove()
	if n := root.match(nil, "x.y.z"); len(n) != 1 || len(n[0].subs) != 1 || n[0].subs[0] != s2 {
		t.Fatalf("after removing one of two, match = %v", n)
	}
	s2.remove()
	s3.remove()
	if len(root.children) != 0 {
		t.Fatalf("tree not pruned: %v", root.children)
	}
}

// FuzzTopic: validation never panics, and a valid topic subscribed to as
// a pattern matches itself, once.
func FuzzTopic(f *testing.F) {
	for _, s := range []string{"a", "a.b", "a.*", "a.>", "*.b.>", "", ".", "a..b", "é.x", "a.>.b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, topic string) {
		pub, sub := validTopic(topic, false, DefaultMaxTopicLength), validTopic(topic, true, DefaultMaxTopicLength)
		if pub && !sub {
			t.Fatalf("%q valid to publish but not to subscribe", topic)
		}
		if !pub {
			return
		}
		var root node
		p := &Peer{id: "p"}
		s := root.insert(p, topic)
		if n := root.match(nil, topic); len(n) != 1 || n[0] != s.n {
			t.Fatalf("%q does not match itself once: %v", topic, n)
		}
		s.remove()
		if len(root.children) != 0 {
			t.Fatalf("%q: tree not empty after remove", topic)
		}
	})
}

// FuzzMatch: the subscription tree matches a topic to a pattern exactly
// when a plain word-by-word reading of the pattern says it should.
func FuzzMatch(f *testing.F) {
	for _, pt := range [][2]string{{"a.*", "a.b"}, {"a.>", "a"}, {"a.>", "a.b.c"}, {"*.b", "a.b"}, {">", "x"}, {"a.*.c", "a.b.d"}, {"*", "a.b"}} {
		f.Add(pt[0], pt[1])
	}
	f.Fuzz(func(t *testing.T, pattern, topic string) {
		if !validTopic(pattern, true, DefaultMaxTopicLength) || !validTopic(topic, false, DefaultMaxTopicLength) {
			return
		}
		var root node
		root.insert(&Peer{id: "p"}, pattern)
		if got, want := len(root.match(nil, topic)) == 1, naiveMatch(pattern, topic); got != want {
			t.Fatalf("pattern %q, topic %q: tree says %v, words say %v", pattern, topic, got, want)
		}
	})
}

// naiveMatch reads a pattern word by word: "*" takes any one word, a last
// ">" one or more.
func naiveMatch(pattern, topic string) bool {
	p, w := strings.Split(pattern, "."), strings.Split(topic, ".")
	for i, pw := range p {
		switch {
		case pw == ">":
			return len(w) > i
		case i >= len(w):
			return false
		case pw != "*" && pw != w[i]:
			return false
		}
	}
	return len(p) == len(w)
}
