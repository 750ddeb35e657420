package hub

import (
	"context"
	"sort"
	"time"
)

// The last refusals of the admin API (admin.refusals): each node's server
// keeps its own (server.Audit does) and gives them to its hub with
// [Hub.SetRefusals]; [Hub.ListRefusals] gathers those of every node.

// RefusalDetail is one refusal as the admin API lists it: a request
// refused by authentication, by the rules or by a limit.
type RefusalDetail struct {
	Time     time.Time `json:"time"`
	Node     string    `json:"node,omitempty"`
	Kind     string    `json:"kind"`               // "auth", "rules" or "limit"
	Reason   string    `json:"reason"`             // the check that refused: "auth", "policy", "host", "rate", ...
	Identity string    `json:"identity,omitempty"` // who asked, when known
	Peer     string    `json:"peer,omitempty"`     // the peer's id; none for a POST or a refused handshake
	Remote   string    `json:"remote,omitempty"`   // the client's network address
	Action   string    `json:"action"`             // "connect", "POST", "subscribe", "call", "message", ...
	Target   string    `json:"target,omitempty"`   // the topic, method or path asked
	Status   int       `json:"status,omitempty"`   // the HTTP status of a refused HTTP request
	Error    string    `json:"error,omitempty"`
}

// A RefusalLister keeps the last refusals of a node: server.Audit is one.
type RefusalLister interface {
	// Refusals returns at most limit of the refusals kept, newest
	// first.
	Refusals(limit int) []RefusalDetail
}

// SetRefusals sets where the admin API reads this node's last refusals:
// a server sets its Audit when it is made. Nil: none.
func (h *Hub) SetRefusals(l RefusalLister) {
	h.adm.mu.Lock()
	defer h.adm.mu.Unlock()
	h.adm.refusals = l
}

// RefusalQuery bounds what [Hub.ListRefusals] lists.
type RefusalQuery struct {
	Limit int `json:"limit,omitempty"` // at most this many; default DefaultPageSize, at most MaxPageSize
}

// localRefusals returns this node's last refusals, newest first.
func (h *Hub) localRefusals(q RefusalQuery) []RefusalDetail {
	h.adm.mu.Lock()
	l := h.adm.refusals
	h.adm.mu.Unlock()
	out := []RefusalDetail{}
	if l == nil {
		return out
	}
	out = append(out, l.Refusals(pageSize(q.Limit))...)
	for i := range out {
		out[i].Node = h.node()
	}
	return out
}

// ListRefusals lists the last refusals of every node of the cluster,
// newest first, at most q.Limit; when some nodes did not answer, those
// of the others with an [*UnansweredError].
func (h *Hub) ListRefusals(ctx context.Context, q RefusalQuery) ([]RefusalDetail, error) {
	remote, err := askNodes[[]RefusalDetail](ctx, h, opRefusals, q)
	unanswered, err := splitUnanswered(err)
	if err != nil {
		return nil, err
	}
	all := h.localRefusals(q)
	for _, a := range remote {
		all = append(all, a.v...)
	}
	if len(remote) > 0 {
		sort.SliceStable(all, func(i, j int) bool { return all[i].Time.After(all[j].Time) })
	}
	return all[:min(len(all), pageSize(q.Limit))], unanswered
}
