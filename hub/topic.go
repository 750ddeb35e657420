package hub

import (
	"fmt"
	"strings"

	"github.com/switchboard-rpc/switchboard/peer"
)

// validTopic reports whether t is a topic one may publish on: at most
// maxLen bytes of dot-separated, non-empty words of letters, digits, '_',
// '-' and ':'. With wildcards set, t may also be a subscription pattern: a
// word may be "*" (any one word) and the last word may be ">" (one or
// more words).
func validTopic(t string, wildcards bool, maxLen int) bool {
	if t == "" || len(t) > maxLen {
		return false
	}
	start := 0
	for i := 0; i <= len(t); i++ {
		if i < len(t) && t[i] != '.' {
			continue
		}
		w := t[start:i]
		switch {
		case w == "":
			return false
		case w == "*" || w == ">":
			if !wildcards || w == ">" && i != len(t) {
				return false
			}
		default:
			for j := 0; j < len(w); j++ {
				if !wordByte(w[j]) {
					return false
				}
			}
		}
		start = i + 1
	}
	return true
}

func wordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '_' || c == '-' || c == ':'
}

// node is one word of the subscription tree. A pattern's words are the path
// from the root; subs holds the subscriptions whose pattern ends here.
// "*" and ">" are children like any other word.
type node struct {
	parent   *node
	word     string
	children map[string]*node
	subs     []*subscription
}

// subscription is one peer's interest in one pattern. idx is its position
// in n.subs, so that removing it is O(1).
type subscription struct {
	p       *Peer
	n       *node
	idx     int
	pattern string
}

// insert adds a subscription of p to pattern and returns it.
func (root *node) insert(p *Peer, pattern string) *subscription {
	n := root
	for w := range strings.SplitSeq(pattern, ".") {
		c := n.children[w]
		if c == nil {
			if n.children == nil {
				n.children = make(map[string]*node)
			}
			c = &node{parent: n, word: w}
			n.children[w] = c
		}
		n = c
	}
	s := &subscription{p: p, n: n, idx: len(n.subs), pattern: pattern}
	n.subs = append(n.subs, s)
	return s
}

// remove takes s out of the tree and prunes the nodes left empty.
func (s *subscription) remove() {
	n := s.n
	last := len(n.subs) - 1
	moved := n.subs[last]
	n.subs[s.idx] = moved
	moved.idx = s.idx
	n.subs[last] = nil
	n.subs = n.subs[:last]
	for n.parent != nil && len(n.subs) == 0 && len(n.children) == 0 {
		delete(n.parent.children, n.word)
		n = n.parent
	}
}

// match appends to dst the nodes holding subscriptions that match topic
// (which has no wildcards) and returns dst.
func (root *node) match(dst []*node, topic string) []*node {
	return root.matchFrom(dst, topic)
}

func (n *node) matchFrom(dst []*node, rest string) []*node {
	if rest == "" {
		if len(n.subs) > 0 {
			dst = append(dst, n)
		}
		return dst
	}
	if len(n.children) == 0 {
		return dst
	}
	word, tail, ok := strings.Cut(rest, ".")
	if !ok {
		tail = ""
	}
	if c := n.children[">"]; c != nil && len(c.subs) > 0 {
		dst = append(dst, c)
	}
	if c := n.children[word]; c != nil {
		dst = c.matchFrom(dst, tail)
	}
	if c := n.children["*"]; c != nil {
		dst = c.matchFrom(dst, tail)
	}
	return dst
}

// checkTopic returns the -32602 error for a topic (or, with wildcards, a
// pattern) a peer sent that is too long or malformed, and counts the too
// long.
func (h *Hub) checkTopic(t string, wildcards bool) *peer.Error {
	what := "topic to publish on"
	if wildcards {
		what = "topic pattern"
	}
	switch {
	case len(t) > h.o.MaxTopicLength:
		h.stats.overTopicLen.Add(1)
		return invalidParams(fmt.Sprintf("%s longer than %d bytes: %s", what, h.o.MaxTopicLength, quote(t)))
	case !validTopic(t, wildcards, h.o.MaxTopicLength):
		return invalidParams("invalid " + what + ": " + quote(t))
	}
	return nil
}

// overlapping appends to dst the subscriptions in the tree below n whose
// pattern overlaps the rest of a pattern (some topic matches both).
func (n *node) overlapping(dst []*subscription, rest string) []*subscription {
	if rest == "" {
		return append(dst, n.subs...)
	}
	word, tail, _ := strings.Cut(rest, ".")
	if c := n.children[">"]; c != nil {
		dst = append(dst, c.subs...) // ">" takes this word and any after
	}
	switch word {
	case ">": // any pattern going on from here overlaps
		for w, c := range n.children {
			if w != ">" {
				dst = c.all(dst)
			}
		}
	case "*":
		for w, c := range n.children {
			if w != ">" {
				dst = c.overlapping(dst, tail)
			}
		}
	default:
		if c := n.children[word]; c != nil {
			dst = c.overlapping(dst, tail)
		}
		if c := n.children["*"]; c != nil {
			dst = c.overlapping(dst, tail)
		}
	}
	return dst
}

// all appends the subscriptions in the tree below n, n's included.
func (n *node) all(dst []*subscription) []*subscription {
	dst = append(dst, n.subs...)
	for _, c := range n.children {
		dst = c.all(dst)
	}
	return dst
}
