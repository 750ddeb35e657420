// Package ident puts an identity (a token's subject, a peer id) into one
// topic word, so that it stands for itself only: the escaping that the
// hub's rules ({user}), its rpc.call addresses ("user.<identity>") and the
// clients share.
//
// The mapping keeps the bytes A-Z, a-z, 0-9, '_' and '-' as they are and
// writes every other byte of the identity's UTF-8 as ':' and two lower-case
// hex digits, ':' itself included. The result is one word of a topic (only
// letters, digits, '_', '-' and ':'), never a wildcard, and no two
// identities share it: "john.doe@example.com" is "john:2edoe:40example:2ecom",
// "*" is ":2a", "auth0|abc" is "auth0:7cabc". The empty identity has no
// word ("").
package ident

// hexDigits are the digits of an escaped byte.
const hexDigits = "0123456789abcdef"

// Word returns identity escaped into one topic word ("" for "").
func Word(identity string) string {
	n := 0
	for i := 0; i < len(identity); i++ {
		if !plain(identity[i]) {
			n++
		}
	}
	if n == 0 {
		return identity
	}
	b := make([]byte, 0, len(identity)+2*n)
	for i := 0; i < len(identity); i++ {
		c := identity[i]
		if plain(c) {
			b = append(b, c)
			continue
		}
		b = append(b, ':', hexDigits[c>>4], hexDigits[c&0xf])
	}
	return string(b)
}

// plain reports whether c stands for itself in a word.
func plain(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-'
}

// Is reports whether word is Word(identity), without building it: false
// for the empty identity.
func Is(word, identity string) bool {
	if identity == "" {
		return false
	}
	j := 0
	for i := 0; i < len(identity); i++ {
		c := identity[i]
		if plain(c) {
			if j >= len(word) || word[j] != c {
				return false
			}
			j++
			continue
		}
		if j+3 > len(word) || word[j] != ':' || word[j+1] != hexDigits[c>>4] || word[j+2] != hexDigits[c&0xf] {
			return false
		}
		j += 3
	}
	return j == len(word)
}
