package server

import (
	"fmt"
	"sync"
	"time"

	"github.com/switchboard-rpc/switchboard/hub"
)

// The memory of the audit trail: the last refusals, whatever the log
// level and the rate limit let through, for the admin API
// (admin.refusals). They are kept in a ring of fixed size: a refusal
// costs a lock and a copy into its slot, no allocation; a request served
// costs nothing.

// KeptRefusals is how many refusals an Audit keeps: the newest replace
// the oldest.
const KeptRefusals = 100

// keptRefusal is one refusal as kept: what refused reads, turned into
// text only when listed.
type keptRefusal struct {
	at                     time.Time
	kind                   auditKind
	status                 int
	identity               any
	reason, action, target string
	peer, remote           string
	err                    error
}

type refusalRing struct {
	mu   sync.Mutex
	buf  [KeptRefusals]keptRefusal
	next int // the slot of the next refusal
	n    int // the slots filled
}

// keep records one refusal.
func (a *Audit) keep(k auditKind, reason string, w who, action, target string, err error, status int) {
	r := &a.kept
	now := a.now()
	r.mu.Lock()
	r.buf[r.next] = keptRefusal{
		at: now, kind: k, status: status, identity: w.identity,
		reason: reason, action: action, target: target, peer: w.peer, remote: w.remote, err: err,
	}
	r.next = (r.next + 1) % KeptRefusals
	r.n = min(r.n+1, KeptRefusals)
	r.mu.Unlock()
}

// Refusals returns at most limit of the last refusals, newest first
// (limit <= 0: all those kept). It implements hub.RefusalLister: a
// Server gives its Audit to its hub, for admin.refusals.
func (a *Audit) Refusals(limit int) []hub.RefusalDetail {
	r := &a.kept
	r.mu.Lock()
	n := r.n
	if limit > 0 {
		n = min(n, limit)
	}
	kept := make([]keptRefusal, n)
	for i := range kept {
		kept[i] = r.buf[(r.next-1-i+KeptRefusals)%KeptRefusals]
	}
	r.mu.Unlock()
	out := make([]hub.RefusalDetail, n)
	for i, k := range kept {
		out[i] = hub.RefusalDetail{
			Time: k.at, Kind: auditKindNames[k.kind], Reason: k.reason, Identity: identityName(k.identity),
			Peer: k.peer, Remote: k.remote, Action: k.action, Target: k.target, Status: k.status,
		}
		if k.err != nil {
			out[i].Error = k.err.Error()
		}
	}
	return out
}

// identityName is the name of an identity as the admin API shows it: a
// string, a Stringer's (a token's subject), or as fmt prints it.
func identityName(id any) string {
	switch v := id.(type) {
	case nil:
		return ""
	case string:
		return v
	case fmt.Stringer:
		return v.String()
	}
	return fmt.Sprint(id)
}
