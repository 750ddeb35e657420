package wildcard

import "testing"

func TestMatch(t *testing.T) {
	for _, tt := range []struct {
		pattern, topic string
		want           bool
	}{
		{"chat.room1", "chat.room1", true},
		{"chat.room1", "chat.room2", false},
		{"chat.*", "chat.room1", true},
		{"chat.*", "chat", false},
		{"chat.*", "chat.room1.x", false},
		{"chat.>", "chat.room1", true},
		{"chat.>", "chat.room1.x", true},
		{"chat.>", "chat", false},
		{">", "a.b.c", true},
		{"*.b", "a.b", true},
		{"*.b", "a.c", false},
		{"a.b", "a", false},
		{"a", "a.b", false},
		{"news.*", "news.a.b", false},
		{">", "a", true},
	} {
		if got := Match(tt.pattern, tt.topic); got != tt.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tt.pattern, tt.topic, got, tt.want)
		}
	}
}
