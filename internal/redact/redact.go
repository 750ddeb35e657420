// Package redact hides the secrets a URL may carry before it is logged or
// printed: the password of its user information, or the whole of it when
// it is a token (nats://TOKEN@host), and the values of its query and its
// fragment (https://login.example/jwks?token=...). The scheme, host, port
// and path stay, which is what a reader of the log needs to tell where.
//
// Every URL the hub logs or prints goes through [URL] or, inside a longer
// text such as an error message, [Text].
package redact

import (
	"regexp"
	"strings"
)

// Mark replaces each secret.
const Mark = "REDACTED"

// URL returns u with its secrets replaced by [Mark]. A string without
// "://" is returned as it is.
func URL(u string) string {
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok {
		return u
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	authority, tail := rest[:end], rest[end:]
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		user, _, hasPassword := strings.Cut(authority[:at], ":")
		if hasPassword {
			authority = user + ":" + Mark + authority[at:]
		} else { // the user is the secret: a token
			authority = Mark + authority[at:]
		}
	}
	tail, fragment, hasFragment := strings.Cut(tail, "#")
	path, query, hasQuery := strings.Cut(tail, "?")
	var b strings.Builder
	b.WriteString(scheme + "://" + authority + path)
	if hasQuery {
		b.WriteByte('?')
		for i, param := range strings.Split(query, "&") {
			if i > 0 {
				b.WriteByte('&')
			}
			if name, _, ok := strings.Cut(param, "="); ok {
				b.WriteString(name + "=" + Mark)
			} else if param != "" {
				b.WriteString(Mark)
			}
		}
	}
	if hasFragment {
		b.WriteString("#")
		if fragment != "" {
			b.WriteString(Mark)
		}
	}
	return b.String()
}

// inText finds URLs in a text: a scheme, "://", and what follows up to a
// space, a quote or an angle bracket (Go quotes the URL of a *url.Error).
var inText = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>` + "`" + `]*`)

// nextURL finds where a list goes on to another URL: a comma and a scheme.
var nextURL = regexp.MustCompile(`,\s*[A-Za-z][A-Za-z0-9+.-]*://`)

// Text returns s with every URL in it redacted as [URL] does: an error
// message, a comma-separated list of server URLs.
func Text(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	return inText.ReplaceAllStringFunc(s, func(m string) string {
		// Punctuation that ends a URL in a sentence ("dial URL: ...")
		// is the sentence's: it stays, after the redacted URL.
		trimmed := strings.TrimRight(m, ":;,.)")
		return list(trimmed) + m[len(trimmed):]
	})
}

// list redacts a URL or a comma-separated list of them.
func list(m string) string {
	var b strings.Builder
	for {
		loc := nextURL.FindStringIndex(m)
		if loc == nil {
			b.WriteString(URL(m))
			return b.String()
		}
		b.WriteString(URL(m[:loc[0]]) + ",")
		m = strings.TrimLeft(m[loc[0]+1:], " \t")
	}
}
