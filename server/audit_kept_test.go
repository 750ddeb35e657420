package server

import (
	"errors"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/peer"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// The Audit keeps its last KeptRefusals refusals, newest first, whatever
// the log level and the rate limit leave out of the log.
func TestAuditKeepsLastRefusals(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel) // the rules' Debug lines are not logged
	a := NewAudit(zap.New(core))
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a.now = func() time.Time { return now }
	if got := a.Refusals(0); len(got) != 0 {
		t.Fatalf("a new Audit keeps %d refusals", len(got))
	}

	for i := range KeptRefusals + 50 {
		now = now.Add(time.Millisecond)
		a.refused(auditRules, "policy", who{identity: "alice", peer: "p1", remote: "10.0.0.1:5"}, "subscribe", fmt.Sprint("t", i), errors.New("Unauthorized"))
	}
	r := httptest.NewRequest("POST", "/rpc", nil)
	a.request(auditAuth, "auth", r, 401, errors.New("bad token"))

	all := a.Refusals(0)
	if len(all) != KeptRefusals {
		t.Fatalf("kept %d, want %d", len(all), KeptRefusals)
	}
	if got := all[0]; got.Kind != "auth" || got.Reason != "auth" || got.Action != "POST" || got.Target != "/rpc" ||
		got.Status != 401 || got.Error != "bad token" || got.Remote != r.RemoteAddr || got.Identity != "" || !got.Time.Equal(now) {
		t.Fatalf("the newest: %+v", got)
	}
	if got := all[1]; got.Kind != "rules" || got.Target != fmt.Sprint("t", KeptRefusals+49) || got.Identity != "alice" ||
		got.Peer != "p1" || got.Remote != "10.0.0.1:5" || got.Action != "subscribe" || got.Error != "Unauthorized" {
		t.Fatalf("the second newest: %+v", got)
	}
	if got := all[KeptRefusals-1].Target; got != "t51" {
		t.Fatalf("the oldest kept: %s, want t51", got)
	}
	if got := a.Refusals(3); len(got) != 3 || got[2].Target != fmt.Sprint("t", KeptRefusals+48) {
		t.Fatalf("the last 3: %+v", got)
	}
	if n := logs.FilterMessage("refused").Len(); n != 1 {
		t.Fatalf("%d lines logged, want the one at Info", n)
	}
}

// Keeping a refusal allocates nothing: the ring holds what was already
// there.
func TestAuditKeepAllocs(t *testing.T) {
	a := NewAudit(nil)
	w := who{identity: "alice", peer: "p1", remote: "10.0.0.1:5"}
	allocs := testing.AllocsPerRun(1000, func() {
		a.limit(w, peer.LimitRate)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per refusal kept, want 0", allocs)
	}
	if got := a.Refusals(1); len(got) != 1 || got[0].Reason != peer.LimitRate.String() || got[0].Action != "message" {
		t.Fatalf("kept %+v", got)
	}
}

// BenchmarkAuditKeep is the cost of keeping one refusal, the log off.
func BenchmarkAuditKeep(b *testing.B) {
	a := NewAudit(nil)
	w := who{identity: "alice", peer: "p1", remote: "10.0.0.1:5"}
	b.ReportAllocs()
	for b.Loop() {
		a.limit(w, peer.LimitRate)
	}
}
