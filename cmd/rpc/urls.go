package main

import (
	"strings"
)

// This file gives the commands several URLs, the nodes of a cluster of
// hubs: the URL argument may list them, comma-separated, and -url adds
// more. Over a WebSocket the client connects to the first that answers
// and, for the commands that keep running, moves to the next when its
// node goes away (client.Options.URLs). Over HTTP POST one URL is used.

// urlsFlag collects -url values, each possibly comma-separated.
type urlsFlag []string

func (f *urlsFlag) String() string { return strings.Join(*f, ",") }
func (f *urlsFlag) Set(s string) error {
	*f = append(*f, splitList(s)...)
	return nil
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(s string) []string {
	var out []string
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// urls returns the URL argument's URLs and -url's: the first to try, and
// the others. Several need ws:// or wss://, all alike.
func (o *cli) urls(arg string) (first string, others []string, err error) {
	all := append(splitList(arg), o.more...)
	if len(all) == 0 {
		return "", nil, usagef("want a URL")
	}
	if len(all) > 1 {
		for _, u := range all {
			if !strings.HasPrefix(u, "ws://") && !strings.HasPrefix(u, "wss://") {
				return "", nil, usagef("URL %q: several URLs need ws:// or wss://", u)
			}
		}
	}
	return all[0], all[1:], nil
}
