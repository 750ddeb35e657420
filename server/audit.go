package server

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/peer"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// The audit trail: every refusal is logged once, in one form, from here.
// Authentication refusals are logged at Info, the others (the rules,
// the limits, the Host and Origin checks) at Debug. Each kind has a token
// bucket: a flood of refusals logs auditBurst lines and then one line per
// auditEvery, and the next line let through is preceded by one that
// counts those left out. Nothing here runs for a request that is served.

// Audit logs the refusals of a server and of its hub. A Server makes its
// own from Options.Logger unless Options.Audit is set; to have the hub's
// refusals (its Policy's) in the same trail, give the same Audit's
// HubRefused to hub.Options.OnRefused. It is safe for concurrent use.
type Audit struct {
	log     *zap.Logger
	now     func() time.Time // time.Now; tests set their own
	buckets [numAuditKinds]auditBucket
	kept    refusalRing // the last refusals, for admin.refusals (audit_kept.go)
}

// auditKind is a kind of refusal, with its own level and token bucket.
type auditKind int

const (
	auditAuth  auditKind = iota // no or a bad token: Info
	auditRules                  // the hub's Policy or Options.Authorize: Debug
	auditLimit                  // the limits, the Host and Origin checks: Debug
	numAuditKinds
)

var auditKindNames = [numAuditKinds]string{"auth", "rules", "limit"}

var auditLevels = [numAuditKinds]zapcore.Level{zapcore.InfoLevel, zapcore.DebugLevel, zapcore.DebugLevel}

const (
	// auditBurst is the refusals of one kind logged back to back before
	// the rate limit applies.
	auditBurst = 20
	// auditEvery is how often one more refusal of a kind is logged
	// beyond the burst.
	auditEvery = time.Second
)

// NewAudit returns an Audit that logs to log (nil: nowhere).
func NewAudit(log *zap.Logger) *Audit {
	if log == nil {
		log = zap.NewNop()
	}
	return &Audit{log: log, now: time.Now}
}

// auditBucket is the token bucket of one kind.
type auditBucket struct {
	mu      sync.Mutex
	tokens  float64
	last    time.Time // when tokens was last filled; zero: full
	dropped uint64    // refusals left out since the last line
}

// take reports whether a refusal may be logged now, and how many were
// left out before it.
func (b *auditBucket) take(now time.Time) (ok bool, dropped uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.last.IsZero() {
		b.tokens = auditBurst
	} else {
		b.tokens = min(auditBurst, b.tokens+float64(now.Sub(b.last))/float64(auditEvery))
	}
	b.last = now
	if b.tokens < 1 {
		b.dropped++
		return false, 0
	}
	b.tokens--
	dropped, b.dropped = b.dropped, 0
	return true, dropped
}

// who is what the audit says of the requester.
type who struct {
	identity any    // nil: none (yet)
	peer     string // the peer's id; "" for a POST or before a connection
	remote   string
}

func (w who) fields(f []zap.Field) []zap.Field {
	if w.identity != nil {
		f = append(f, identityField(w.identity))
	}
	if w.peer != "" {
		f = append(f, zap.String("peer", w.peer))
	}
	return append(f, zap.String("remote", w.remote))
}

// identityField logs an identity by its name: a Stringer (a token's
// subject), a string, or else as zap encodes it.
func identityField(id any) zap.Field {
	switch v := id.(type) {
	case string:
		return zap.String("identity", v)
	case interface{ String() string }:
		return zap.Stringer("identity", v)
	}
	return zap.Any("identity", id)
}

// refused keeps one refusal of kind k, and logs it if the level and the
// rate limit let it: reason is the check that refused, action and target
// what was asked, err the refusal's error (or nil).
func (a *Audit) refused(k auditKind, reason string, w who, action, target string, err error, extra ...zap.Field) {
	a.keep(k, reason, w, action, target, err, 0)
	a.log1(k, reason, w, action, target, err, extra...)
}

// log1 logs one refusal, if the level and the rate limit let it.
func (a *Audit) log1(k auditKind, reason string, w who, action, target string, err error, extra ...zap.Field) {
	level := auditLevels[k]
	if !a.log.Core().Enabled(level) {
		return // not counted against the bucket either
	}
	ok, dropped := a.buckets[k].take(a.now())
	if !ok {
		return
	}
	if dropped > 0 {
		a.log.Log(level, "refusals not logged", zap.String("kind", auditKindNames[k]), zap.Uint64("count", dropped))
	}
	f := make([]zap.Field, 0, 11+len(extra))
	f = append(f, zap.String("kind", auditKindNames[k]), zap.String("reason", reason))
	f = w.fields(f)
	f = append(f, zap.String("action", action))
	if target != "" {
		f = append(f, zap.String("target", target))
	}
	if err != nil {
		f = append(f, zap.Error(err))
	}
	a.log.Log(level, "refused", append(f, extra...)...)
}

// HubRefused logs a refusal of the hub's Policy (kind "rules"), or a
// request over one of its limits (kind "limit"): give it to
// hub.Options.OnRefused.
func (a *Audit) HubRefused(ctx context.Context, r hub.Refusal) {
	w := who{identity: hub.Identity(ctx), remote: remoteOf(ctx)}
	if r.Peer != nil {
		w.peer = r.Peer.ID()
	}
	kind, reason := auditRules, "policy"
	if r.Limit != "" {
		kind, reason = auditLimit, r.Limit
	}
	a.refused(kind, reason, w, r.Action.String(), r.Target, r.Err)
}

// request keeps and logs a refused HTTP request: before there is an
// identity.
func (a *Audit) request(k auditKind, reason string, r *http.Request, status int, err error) {
	action := r.Method
	if isUpgrade(r) {
		action = "connect"
	}
	w := who{remote: r.RemoteAddr}
	a.keep(k, reason, w, action, r.URL.Path, err, status)
	if !a.log.Core().Enabled(auditLevels[k]) {
		return
	}
	extra := []zap.Field{zap.Int("status", status)}
	if h := r.Header.Get("Origin"); h != "" && k == auditLimit {
		extra = append(extra, zap.String("origin", h))
	}
	if k == auditLimit {
		extra = append(extra, zap.String("host", r.Host))
	}
	a.log1(k, reason, w, action, r.URL.Path, err, extra...)
}

// limit logs a message of a peer over a limit (peer.Options.OnLimit).
func (a *Audit) limit(w who, l peer.Limit) {
	a.refused(auditLimit, l.String(), w, "message", "", nil)
}

// onLimit returns the peer.Options.OnLimit of a connection or POST: it
// counts, and logs who went over.
func (s *Server) onLimit(w who) func(peer.Limit) {
	return func(l peer.Limit) {
		s.counters.limit(l)
		s.audit.limit(w, l)
	}
}

// whoOf returns who makes the request of ctx.
func (s *Server) whoOf(ctx context.Context) who {
	w := who{identity: hub.Identity(ctx), remote: remoteOf(ctx)}
	if p := s.hub.PeerFromContext(ctx); p != nil {
		w.peer = p.ID()
	}
	return w
}

// remoteKey holds the client's address in a request's context, for the
// audit of what the hub refuses.
type remoteKey struct{}

func withRemote(ctx context.Context, remote string) context.Context {
	return context.WithValue(ctx, remoteKey{}, remote)
}

func remoteOf(ctx context.Context) string {
	s, _ := ctx.Value(remoteKey{}).(string)
	return s
}

// accessLog logs one POST at Debug: the methods it called, the status,
// how long it took and who sent it. Nothing is done unless Debug is on.
func (a *Audit) accessLog(r *http.Request, identity any, body []byte, status int, start time.Time) {
	ce := a.log.Check(zapcore.DebugLevel, "post")
	if ce == nil {
		return
	}
	f := []zap.Field{zap.Strings("methods", methodNames(body)), zap.Int("status", status),
		zap.Duration("duration", a.now().Sub(start))}
	if identity != nil {
		f = append(f, identityField(identity))
	}
	ce.Write(append(f, zap.String("remote", r.RemoteAddr))...)
}

// methodNames returns the methods a JSON-RPC request or batch names.
func methodNames(body []byte) []string {
	var one struct{ Method string }
	if json.Unmarshal(body, &one) == nil {
		return []string{one.Method}
	}
	var batch []struct{ Method string }
	if json.Unmarshal(body, &batch) != nil {
		return nil
	}
	names := make([]string, len(batch))
	for i, m := range batch {
		names[i] = m.Method
	}
	return names
}
