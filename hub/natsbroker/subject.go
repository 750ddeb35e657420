package natsbroker

import (
	"strconv"
	"strings"
)

// A hub topic is dot-separated words of letters, digits, '_', '-' and ':'.
// A NATS subject is dot-separated tokens of any printable bytes but
// whitespace, where a token "*" or ">" is a wildcard. So a valid topic is
// its own subject, tokens for words. encodeTopic escapes anything else
// (which the hub never publishes) as %XX, '%' being no topic byte, so
// that nothing becomes a wildcard, whitespace or a token of another
// subject; decodeTopic takes valid topics only, so such a subject never
// reaches subscribers.

// encodeTopic returns the subject words of a topic.
func encodeTopic(topic string) string {
	for i := 0; i < len(topic); i++ {
		if !plainByte(topic[i]) && topic[i] != '.' {
			return escape(topic)
		}
	}
	return topic
}

func escape(topic string) string {
	var b strings.Builder
	for i := 0; i < len(topic); i++ {
		c := topic[i]
		if plainByte(c) || c == '.' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteString(strconv.FormatUint(uint64(c)>>4, 16))
		b.WriteString(strconv.FormatUint(uint64(c)&15, 16))
	}
	return b.String()
}

// decodeTopic returns the topic of subject words, ok false when they are
// not a valid topic (an escaped one included: the hub publishes none, and
// a node delivers no event it could not have published).
func decodeTopic(s string) (topic string, ok bool) {
	word := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '.':
			if word == 0 {
				return "", false
			}
			word = 0
		case plainByte(c):
			word++
		default:
			return "", false
		}
	}
	return s, word > 0
}

// plainByte reports whether c may appear in a topic word.
func plainByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '_' || c == '-' || c == ':'
}
