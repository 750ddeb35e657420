package natsbroker

import "testing"

func TestTopicSubjects(t *testing.T) {
	for _, tc := range []struct{ topic, subject string }{
		{"chat.room1", "chat.room1"},
		{"a-b_c:d.E9", "a-b_c:d.E9"},
		{"chat.*", "chat.%2a"},
		{"chat.>", "chat.%3e"},
		{"a b", "a%20b"},
		{"a\tb.$SYS", "a%09b.%24SYS"},
	} {
		if got := encodeTopic(tc.topic); got != tc.subject {
			t.Errorf("encodeTopic(%q) = %q, want %q", tc.topic, got, tc.subject)
		}
	}
	for _, tc := range []struct {
		subject string
		ok      bool
	}{
		{"chat.room1", true}, {"x", true}, {"", false}, {"a..b", false}, {"a.", false},
		{".a", false}, {"chat.%2a", false}, {"a.*", false}, {"a.>", false}, {`a"b`, false},
	} {
		if got, ok := decodeTopic(tc.subject); ok != tc.ok || ok && got != tc.subject {
			t.Errorf("decodeTopic(%q) = %q, %v; want ok %v", tc.subject, got, ok, tc.ok)
		}
	}
}
