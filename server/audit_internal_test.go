package server

import (
	"net/http/httptest"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// auditAt returns an Audit that logs at level into logs, on a clock the
// test moves by setting *now.
func auditAt(level zapcore.Level) (a *Audit, logs *observer.ObservedLogs, now *time.Time) {
	core, logs := observer.New(level)
	a = NewAudit(zap.New(core))
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a.now = func() time.Time { return clock }
	return a, logs, &clock
}

// A flood of refusals logs auditBurst lines, then one per auditEvery, each
// after a line that counts those left out; each kind has its own bucket.
func TestAuditRateLimit(t *testing.T) {
	a, logs, now := auditAt(zapcore.DebugLevel)
	r := httptest.NewRequest("GET", "/rpc", nil)

	for range auditBurst + 50 {
		a.request(auditAuth, "auth", r, 401, nil)
	}
	if n := logs.FilterMessage("refused").Len(); n != auditBurst {
		t.Fatalf("%d lines for a flood, want %d", n, auditBurst)
	}
	// Another kind is not held back by the first one's flood.
	a.request(auditLimit, "host", r, 403, nil)
	if n := logs.FilterMessage("refused").Len(); n != auditBurst+1 {
		t.Fatalf("%d lines, want %d: a kind is held back by another", n, auditBurst+1)
	}

	*now = now.Add(auditEvery)
	a.request(auditAuth, "auth", r, 401, nil)
	a.request(auditAuth, "auth", r, 401, nil) // no token left: counted
	all := logs.TakeAll()
	if n := len(all); n != auditBurst+3 {
		t.Fatalf("%d lines, want %d", n, auditBurst+3)
	}
	left := all[auditBurst+1]
	if left.Message != "refusals not logged" || left.Level != zapcore.InfoLevel ||
		left.ContextMap()["count"] != uint64(50) || left.ContextMap()["kind"] != "auth" {
		t.Fatalf("after the flood: %v %v", left.Message, left.ContextMap())
	}
	if all[auditBurst+2].Message != "refused" {
		t.Fatalf("the refusal after the count: %v", all[auditBurst+2].Message)
	}

	// After a quiet while the bucket is full again, and counts the one
	// left out before.
	*now = now.Add(time.Hour)
	for range auditBurst {
		a.request(auditAuth, "auth", r, 401, nil)
	}
	all = logs.TakeAll()
	if len(all) != auditBurst+1 || all[0].ContextMap()["count"] != uint64(1) {
		t.Fatalf("after a quiet hour: %d lines, first %v", len(all), all[0].ContextMap())
	}
}

// A refusal of a level the logger leaves out costs no token.
func TestAuditLevelOff(t *testing.T) {
	a, logs, _ := auditAt(zapcore.InfoLevel)
	r := httptest.NewRequest("GET", "/rpc", nil)
	for range auditBurst * 2 {
		a.request(auditLimit, "host", r, 403, nil)
	}
	if logs.Len() != 0 {
		t.Fatalf("%d Debug lines logged at Info", logs.Len())
	}
	if a.buckets[auditLimit].dropped != 0 {
		t.Fatalf("refusals not logged for their level were counted as left out")
	}
}
