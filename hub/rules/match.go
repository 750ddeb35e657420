package rules

import (
	"fmt"
	"strings"

	"github.com/switchboard-rpc/switchboard/internal/ident"
)

// userWord in a pattern stands for the identity of the peer asking.
const userWord = "{user}"

// covers reports whether pattern p allows what a peer asks for, target t
// (a topic, a pattern, a method name or an rpc.call address), word by
// word: a literal word covers the same word, "*" any one word of t except
// ">", "{user}" the word user, and a final ">" the rest of t, one or more
// words of any kind. user "" matches no "{user}".
func covers(p, t, user string) bool {
	for {
		pw, prest, pmore := strings.Cut(p, ".")
		tw, trest, tmore := strings.Cut(t, ".")
		switch pw {
		case ">":
			return tw != ""
		case "*":
			if tw == ">" || tw == "" {
				return false
			}
		case userWord:
			if !ident.Is(tw, user) {
				return false
			}
		default:
			if pw != tw {
				return false
			}
		}
		if !pmore || !tmore {
			return pmore == tmore
		}
		p, t = prest, trest
	}
}

// checkPattern reports what is wrong with a pattern of a rule or a grant:
// empty words, a ">" that is not last, or braces other than "{user}".
func checkPattern(p string, userOK bool) error {
	if p == "" {
		return fmt.Errorf("empty pattern")
	}
	for i, w := range strings.Split(p, ".") {
		switch {
		case w == "":
			return fmt.Errorf("pattern %q has an empty word", p)
		case w == ">" && i != strings.Count(p, "."):
			return fmt.Errorf("pattern %q: \">\" must be the last word", p)
		case w == userWord && !userOK:
			return fmt.Errorf("pattern %q: {user} is for rules, not grants", p)
		case w != userWord && strings.ContainsAny(w, "{}"):
			return fmt.Errorf("pattern %q: the only placeholder is {user}", p)
		case len(w) > 1 && strings.ContainsAny(w, "*>"):
			return fmt.Errorf("pattern %q: a wildcard is a whole word", p)
		}
	}
	return nil
}
