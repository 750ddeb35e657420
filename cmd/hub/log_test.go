package main

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"go.uber.org/zap"
)

// logOf runs the hub with args until it listens, stops it, and returns
// what it logged.
func logOf(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var out testkit.Buffer
	err := run(ctx, append([]string{"-addr", "127.0.0.1:0"}, args...), &out, func(net.Addr) { cancel() })
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return out.String()
}

// TestLogJSON: JSON lines (also the format on anything but a terminal),
// each with an RFC 3339 timestamp in UTC, to the millisecond.
func TestLogJSON(t *testing.T) {
	for _, format := range []string{"json", "auto"} {
		before := time.Now().Truncate(time.Millisecond)
		log := logOf(t, "-log-format", format)
		after := time.Now()
		var msgs []string
		for line := range strings.Lines(log) {
			var entry struct{ Level, TS, Msg string }
			if err := json.Unmarshal([]byte(line), &entry); err != nil {
				t.Fatalf("-log-format %s: not JSON: %q", format, line)
			}
			ts, err := time.Parse(time.RFC3339Nano, entry.TS)
			if err != nil || !strings.HasSuffix(entry.TS, "Z") || len(entry.TS) != len("2006-01-02T15:04:05.000Z") {
				t.Fatalf("-log-format %s: ts %q: want RFC 3339 in UTC with milliseconds (%v)", format, entry.TS, err)
			}
			if ts.Before(before) || ts.After(after) {
				t.Errorf("-log-format %s: ts %v not between %v and %v", format, ts, before, after)
			}
			msgs = append(msgs, entry.Msg)
		}
		if len(msgs) == 0 || msgs[0] != "hub listening" {
			t.Fatalf("-log-format %s: messages %q", format, msgs)
		}
	}
}

// TestLogDurationJSON: a duration in a JSON line reads as the flags write
// it ("10s"), not as a bare number whose unit the reader must guess.
func TestLogDurationJSON(t *testing.T) {
	var b strings.Builder
	log, _, err := newLogger("info", "json", &b)
	if err != nil {
		t.Fatal(err)
	}
	log.Info("shutting down", zap.Duration("timeout", 10*time.Second))
	if !strings.Contains(b.String(), `"timeout":"10s"`) {
		t.Errorf("log line %q, want \"timeout\":\"10s\"", b.String())
	}
}

// TestLogConsole: columns for people, starting with a local RFC 3339
// timestamp.
func TestLogConsole(t *testing.T) {
	log := logOf(t, "-log-format", "console")
	first, _, _ := strings.Cut(log, "\n")
	fields := strings.Split(first, "\t")
	if len(fields) < 3 || fields[1] != "INFO" || fields[2] != "hub listening" {
		t.Fatalf("first line %q", first)
	}
	if _, err := time.Parse(time.RFC3339Nano, fields[0]); err != nil {
		t.Fatalf("timestamp %q: %v", fields[0], err)
	}
}
