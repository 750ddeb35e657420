// Package wildcard matches dot-separated topics against patterns, where "*"
// stands for one word and a final ">" for one or more: the rule the hub's
// subscriptions and the clients' own routing of events share.
package wildcard

import "strings"

// Match reports whether topic (no wildcards) matches pattern.
func Match(pattern, topic string) bool {
	for {
		pw, prest, pmore := strings.Cut(pattern, ".")
		tw, trest, tmore := strings.Cut(topic, ".")
		if pw == ">" {
			return true
		}
		if pw != "*" && pw != tw {
			return false
		}
		if !pmore || !tmore {
			return pmore == tmore
		}
		pattern, topic = prest, trest
	}
}
