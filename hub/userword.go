package hub

import "github.com/switchboard-rpc/switchboard/internal/ident"

// UserWord returns an identity (a token's subject) escaped into one topic
// word, the word that stands for it wherever an identity enters a topic
// or a rule: the {user} of rules (package rules) and the "user.<identity>"
// target that a Policy sees for an rpc.call to a user's peers. A server
// that publishes to a user's own topics builds them with it, as rules
// match them: "user." + UserWord(sub) + ".inbox".
//
// The letters A-Z and a-z, the digits, '_' and '-' stay as they are;
// every other byte of the identity's UTF-8, ':' included, becomes ':' and
// two lower-case hex digits. So an identity is a name, never a pattern:
// "*" is ":2a" and covers no other word, "a.b" is "a:2eb" and no topic of
// "a" holds it, and "john.doe@example.com" is
// "john:2edoe:40example:2ecom". No two identities have the same word. The
// empty identity has none: UserWord("") is "", which matches nothing.
// The Go and browser clients export the same mapping.
func UserWord(identity string) string { return ident.Word(identity) }
