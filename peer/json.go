package peer

import (
	"encoding/json"
	"github.com/switchboard-rpc/switchboard/internal/jsonx"
	"unicode/utf8"
)

// This file holds the small JSON scanner behind the codec. It validates and
// splits messages without building values, so the envelope of a request
// (jsonrpc, id, method, params) costs one pass and no allocations; params and
// results stay raw JSON until a handler or caller asks for them.

// maxDepth bounds nesting where no Options.MaxDepth applies (validating
// what this side sends), as encoding/json does, so that no input can
// exhaust the stack.
const maxDepth = 10000

// tooDeep is what the scanner returns, instead of an index, when the input
// nests deeper than its limit; -1 means invalid JSON. Both are negative.
const tooDeep = -2

// skipSpace returns the index of the first byte from b[i] on that is not
// white space. Most tokens of a message have none before them: one
// comparison tells, where the four of white space would be four.
func skipSpace(b []byte, i int) int {
	for i < len(b) && b[i] <= ' ' && isSpace[b[i]] {
		i++
	}
	return i
}

// isSpace marks the bytes of JSON white space.
var isSpace = [' ' + 1]bool{' ': true, '\t': true, '\n': true, '\r': true}

// skipValue validates the JSON value starting at b[i], inside depth
// arrays and objects, and returns the index just past it, or a negative
// number if the input is not valid JSON.
func skipValue(b []byte, i, depth int) int { return scanValue(b, i, depth, maxDepth) }

// scanValue validates the JSON value starting at b[i], inside depth arrays
// and objects, and returns the index just past it; -1 if the input is not
// valid JSON, tooDeep if it nests more than limit levels.
func scanValue(b []byte, i, depth, limit int) int {
	if i >= len(b) {
		return -1
	}
	switch c := b[i]; {
	case c == '{':
		return scanObject(b, i, depth, limit, nil)
	case c == '[':
		if depth >= limit {
			return tooDeep
		}
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == ']' {
			return i + 1
		}
		for {
			if i = scanValue(b, i, depth+1, limit); i < 0 {
				return i
			}
			var end bool
			if i, end = nextElem(b, i, ']'); end {
				return i
			}
		}
	case c == '"':
		return skipString(b, i)
	case c == 't':
		return skipLiteral(b, i, "true")
	case c == 'f':
		return skipLiteral(b, i, "false")
	case c == 'n':
		return skipLiteral(b, i, "null")
	case c == '-' || (c >= '0' && c <= '9'):
		return skipNumber(b, i)
	}
	return -1
}

// scanObject validates the object starting at the '{' at b[i], inside
// depth arrays and objects, and returns the index just past it, or a
// negative number as scanValue does. If m is not nil, each member's name
// (its key's text, unquoted) and raw value are recorded in it
// (message.member), in order: a direct call, where a func value cost a
// call through a wrapper for each member of each request. Names are
// nearly always plain ASCII, which the key's bytes between its quotes
// spell; an escaped one is decoded.
func scanObject(b []byte, i, depth, limit int, m *message) int {
	if depth >= limit {
		return tooDeep
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return -1
		}
		ks := i
		var escaped bool
		if n := plainKey(b[i:], m); n > 0 {
			i += n
		} else if i, escaped = scanString(b, i); i < 0 {
			return -1
		}
		name := b[ks+1 : i-1]
		if escaped && m != nil {
			s, _ := unquote(b[ks:i]) // valid, as scanned
			name = []byte(s)
		}
		i = skipSpace(b, i)
		if i >= len(b) || b[i] != ':' {
			return -1
		}
		vs := skipSpace(b, i+1)
		if i = scanValue(b, vs, depth+1, limit); i < 0 {
			return i
		}
		if m != nil {
			m.member(name, b[vs:i])
		}
		var end bool
		if i, end = nextElem(b, i, '}'); end {
			return i
		}
	}
}

// plainKey returns the length of the key at b[0], quotes included, when
// m is not nil and the key is one of a message's member names spelt
// plainly: it needs no scan for the end of a string of unknown text.
// Else it returns 0.
func plainKey(b []byte, m *message) int {
	if m == nil || len(b) < 4 {
		return 0
	}
	switch b[1] {
	case 'j':
		return prefixLen(b, `"jsonrpc"`)
	case 'm':
		return prefixLen(b, `"method"`)
	case 'p':
		return prefixLen(b, `"params"`)
	case 'i':
		return prefixLen(b, `"id"`)
	case 'r':
		return prefixLen(b, `"result"`)
	case 'e':
		return prefixLen(b, `"error"`)
	}
	return 0
}

// prefixLen returns len(s) if b starts with s, else 0.
func prefixLen(b []byte, s string) int {
	if len(b) >= len(s) && string(b[:len(s)]) == s {
		return len(s)
	}
	return 0
}

// nextElem reads what follows an element (or member) of an array (or
// object) that ends with end: after a comma it returns the index of the
// next element and false; at end, the index just past it and true; on
// anything else, -1 and true.
func nextElem(b []byte, i int, end byte) (int, bool) {
	i = skipSpace(b, i)
	if i < len(b) {
		switch b[i] {
		case end:
			return i + 1, true
		case ',':
			return skipSpace(b, i+1), false
		}
	}
	return -1, true
}

func skipLiteral(b []byte, i int, lit string) int {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// skipString validates the string starting at the quote b[i].
func skipString(b []byte, i int) int {
	i, _ = scanString(b, i)
	return i
}

// stringStop marks the bytes that end a run of plain characters in a JSON
// string: the closing quote, a backslash, and the control characters,
// which must be escaped.
var stringStop = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// scanString validates the string starting at the quote b[i], returning
// the index just past it (-1 if invalid) and whether it holds escapes.
func scanString(b []byte, i int) (int, bool) {
	escaped := false
	i++
	for {
		for i < len(b) && !stringStop[b[i]] {
			i++
		}
		if i >= len(b) {
			return -1, false
		}
		switch b[i] {
		case '"':
			return i + 1, escaped
		case '\\':
			escaped = true
			if i+1 >= len(b) {
				return -1, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return -1, false
				}
				for _, h := range b[i+2 : i+6] {
					if !isHex(h) {
						return -1, false
					}
				}
				i += 6
			default:
				return -1, false
			}
		default: // a control character
			return -1, false
		}
	}
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func skipNumber(b []byte, i int) int {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			return -1
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return -1
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	return i
}

// validJSON reports whether b holds exactly one JSON value, with optional
// surrounding white space.
func validJSON(b []byte) bool {
	i := skipValue(b, skipSpace(b, 0), 0)
	return i >= 0 && skipSpace(b, i) == len(b)
}

// unquote returns the text of the JSON string s (quotes included).
func unquote(s []byte) (string, bool) { return frameText{}.unquote(s) }

// unquote returns the text of the JSON string s (quotes included), the
// name of a method (see frameText).
func (t frameText) unquote(s []byte) (string, bool) {
	if len(s) < 2 || s[0] != '"' {
		return "", false
	}
	inner := s[1 : len(s)-1]
	// The last name is a plain one: an equal name is plain too.
	if t.last != nil && string(inner) == *t.last {
		return *t.last, true
	}
	simple := true
	for _, c := range inner {
		if c == '\\' || c >= utf8.RuneSelf {
			simple = false
			break
		}
	}
	if simple {
		if t.last != nil {
			*t.last = string(inner)
			return *t.last, true
		}
		return string(inner), true
	}
	var out string
	if err := json.Unmarshal(s, &out); err != nil {
		return "", false
	}
	return out, true
}

// keyIs reports whether the raw JSON string key spells name. Keys are nearly
// always plain ASCII; escaped spellings are decoded on the slow path. An
// escape is longer than what it stands for, so a key no longer than name
// in quotes is that plain spelling or not name at all: the methods of
// most requests are told from rpc.cancel without a look at their bytes.
func keyIs(key []byte, name string) bool {
	switch {
	case len(key) < len(name)+2:
		return false
	case len(key) == len(name)+2:
		return string(key[1:len(key)-1]) == name
	}
	for _, c := range key {
		if c == '\\' {
			s, ok := unquote(key)
			return ok && s == name
		}
	}
	return false
}

// appendString appends s as a JSON string.
func appendString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			b, _ := jsonx.Marshal(s) // cannot fail for a string
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}
