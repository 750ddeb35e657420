package hub

import "strings"

// Patterns as strings, for the history and presence, which cannot use the
// subscription tree: the history matches stored topics against a pattern,
// presence asks whether two patterns can match a topic in common.

// hasWildcard reports whether a valid pattern has a "*" or ">" word.
func hasWildcard(pattern string) bool {
	return strings.Contains(pattern, "*") || strings.Contains(pattern, ">")
}

// overlap reports whether some topic matches both patterns.
func overlap(a, b string) bool {
	for {
		aw, arest, amore := strings.Cut(a, ".")
		bw, brest, bmore := strings.Cut(b, ".")
		if aw == ">" || bw == ">" {
			return true // the other has a word here, and ">" takes it and any more
		}
		if aw != "*" && bw != "*" && aw != bw {
			return false
		}
		if !amore || !bmore {
			return amore == bmore
		}
		a, b = arest, brest
	}
}
