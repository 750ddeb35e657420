// Package rules turns declarative authorization rules, and the grants a
// JSON Web Token carries, into a [hub.Policy]: who may subscribe to which
// topics (and read their history and presence), publish, provide and call
// methods, and address peers with rpc.call (docs/protocol.md, "Calling one particular peer"; docs/security.md, "Identity and rules").
//
// A rule names actions, patterns and who it is for:
//
//	rules:
//	  - allow: [subscribe]
//	    to: ["user.{user}.>"]   # {user}: the word must be the peer's own identity
//	    who: authenticated
//	  - allow: [publish, address]
//	    to: [">"]
//	    who: role=backend       # a token claim "role" with the value "backend"
//
// who is "anyone", "authenticated" (any identity), or "claim=value" (a
// token whose claim has that value, or holds it in a list); the claim may
// be a dotted path into nested claims ("realm_access.roles=admin").
// Patterns are dot-separated words: "*" stands for one word, ">" (last)
// for one or more, and "{user}" for the peer's identity. A pattern covers
// what a peer asks for word by word, so "user.{user}.>" lets alice
// subscribe to "user.alice.inbox" and to "user.alice.>", and nobody to
// "user.*.inbox". What no rule allows is refused with -32001.
//
// An identity is a name, never a pattern: {user} is the identity escaped
// into one word by [hub.UserWord] ("john.doe@example.com" is
// "john:2edoe:40example:2ecom", "*" is ":2a"), so that no identity widens
// what a rule allows and no two share a topic.
//
// A token whose claims hold a "switchboard" object is judged by those
// grants alone ([Grants]); the rules apply to every other peer. The
// built-in methods that no action decides ([hub.Builtin.Open]: rpc.ping,
// rpc.whoami, rpc.discover, rpc.cancel, rpc.progress, rpc.auth,
// rpc.unsubscribe, rpc.unprovide) are always allowed.
//
//	set, err := rules.Compile(cfg.Rules)
//	h := hub.New(&hub.Options{Policy: set.Policy})
//	srv := server.New(&server.Options{Hub: h, Authorize: set.Authorize})
//
// Checking a rule allocates nothing: it compares words in place.
package rules
