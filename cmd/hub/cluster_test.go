package main

import (
	"io"
	"strings"
	"testing"
)

// TestEmbeddedNATS: -nats embedded runs NATS in the process and joins
// it; the node's name is in /metrics, linked.
func TestEmbeddedNATS(t *testing.T) {
	url, _ := start(t, "-nats", "embedded", "-nats-listen", "127.0.0.1:0", "-nats-jetstream", "-node", "n1")
	_, body := rawRequest(t, strings.TrimPrefix(url, "http://"), "/metrics", "")
	if !strings.Contains(body, `switchboard_cluster_connected{node="n1"} 1`) {
		t.Fatalf("/metrics without the cluster link of n1:\n%s", grepLines(body, "cluster"))
	}
}

func TestClusterFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-nats-jetstream"},
		{"-nats", "embedded", "-node", "a.b", "-nats-listen", "127.0.0.1:0"},
		{"-nats", "embedded", "-nats-listen", "nowhere"},
	} {
		if err := run(t.Context(), args, io.Discard, nil); err == nil {
			t.Errorf("hub %q started", args)
		}
	}
}

func grepLines(s, word string) string {
	var out []string
	for line := range strings.SplitSeq(s, "\n") {
		if strings.Contains(line, word) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
