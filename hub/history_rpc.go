package hub

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"

	"github.com/switchboard-rpc/switchboard/peer"
)

// This file answers rpc.history: a page of the store, encoded within the
// hub's message size limit.

// serveHistory answers rpc.history: {"topic": pattern, "limit": n,
// "since": position}, or [pattern, limit]. Reading a pattern's history
// takes the permission to subscribe to it.
func (h *Hub) serveHistory(ctx context.Context, req *peer.Request) (any, error) {
	const usage = `rpc.history takes {"topic": pattern, "limit": integer, "since": position}`
	var p struct {
		Topic *string          `json:"topic"`
		Limit *int             `json:"limit"`
		Since *json.RawMessage `json:"since"`
	}
	var a []json.RawMessage
	switch form, err := readParams(req.Params, &p, &a); {
	case err != nil:
		return nil, invalidParams(usage)
	case form == paramsByPosition:
		if len(a) < 1 || len(a) > 2 || json.Unmarshal(a[0], &p.Topic) != nil ||
			len(a) == 2 && json.Unmarshal(a[1], &p.Limit) != nil {
			return nil, invalidParams(usage)
		}
	}
	if p.Topic == nil || !validTopic(*p.Topic, true, h.o.MaxTopicLength) {
		return nil, invalidParams(usage)
	}
	limit := DefaultHistoryLimit
	if p.Limit != nil {
		if *p.Limit < 0 {
			return nil, invalidParams(`"limit" must not be negative`)
		}
		limit = min(*p.Limit, MaxHistoryLimit)
	}
	ep := h.ep.Load()
	var after uint64
	if p.Since != nil && string(*p.Since) != "null" {
		since, err := positionParam(*p.Since)
		if err != nil {
			return nil, err
		}
		if since.Epoch == ep.name {
			after = since.Seq
		}
	}
	if err := h.allow(ctx, Subscribe, *p.Topic); err != nil {
		return nil, err
	}
	page, err := h.store.Read(Query{Pattern: *p.Topic, After: after, Limit: limit, Newest: true})
	if err != nil {
		return nil, err
	}
	return json.RawMessage(historyResult(page, ep, h.o.MaxMessage-len(req.ID.String())-replyEnvelope)), nil
}

// replyEnvelope is what a reply adds around its result, beside the id:
// {"jsonrpc":"2.0","id":,"result":}.
const replyEnvelope = len(`{"jsonrpc":"2.0","id":,"result":}`)

// historyResult encodes the result of rpc.history for page of epoch ep, in
// at most max bytes (docs/streams.md): when its events do not all fit, the
// newest that do, and "truncated": true. It is encoded here, not by the
// connection, so that no more than max bytes are ever made for one reply,
// whatever the history holds.
func historyResult(page Page, ep *epochName, max int) []byte {
	events := page.Events
	b := make([]byte, 0, 64)
	b = append(b, `{"epoch":`...)
	b = append(b, ep.json...)
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, page.Last, 10)
	b = append(b, `,"events":[`...)
	const tail = len(`],"truncated":true}`)
	room, used := max-len(b)-tail, 0
	from := len(events)
	for from > 0 {
		n := historyEventSize(events[from-1])
		if used+n > room {
			break
		}
		used += n
		from--
	}
	b = slices.Grow(b, used+tail)
	for i, e := range events[from:] {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"topic":"`...)
		b = append(b, e.Topic...)
		b = append(b, `","data":`...)
		b = append(b, e.Data...)
		b = append(b, `,"seq":`...)
		b = strconv.AppendUint(b, e.Seq, 10)
		b = append(b, '}')
	}
	if from > 0 {
		return append(b, `],"truncated":true}`...)
	}
	return append(b, "]}"...)
}

// historyEventSize is the size of e in an rpc.history result, with the
// comma that may precede it: {"topic":"t","data":d,"seq":n}. Topics need
// no escaping (validTopic).
func historyEventSize(e Event) int {
	return len(`,{"topic":"","data":,"seq":}`) + len(e.Topic) + len(e.Data) + 20
}
