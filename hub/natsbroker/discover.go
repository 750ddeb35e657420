package natsbroker

import (
	"context"
	"encoding/json"
	"sort"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/switchboard-rpc/switchboard/internal/jsonx"
)

// This file spans rpc.discover over the nodes: a node asks the nodes
// whose peers provide methods, on "<prefix>.discover", to describe them;
// each answers with what its own rpc.discover would add for its peers
// (hub.BrokerHandle.DescribeProvided), and the asking node lists those
// methods after its own peers'. A node that does not answer within discoverWait
// describes nothing, as a provider that does not answer rpc.discover.

// discoverWait bounds how long a node waits for the others to describe
// their peers' methods. The nodes asked give their own providers three
// quarters of it, so that a silent provider does not silence its node.
var discoverWait = 3 * time.Second

type discoverQuery struct {
	Node    string `json:"node"`
	Timeout int64  `json:"timeout_ms"`
}

type discoverAnswer struct {
	Node    string            `json:"node"`
	Methods []json.RawMessage `json:"methods"`
}

// DescribeRemote implements hub.Describer: it asks the other nodes that
// have providers, and gathers the answers that come within discoverWait
// (or ctx), sorted by node.
func (d *directory) DescribeRemote(ctx context.Context) []json.RawMessage {
	want := make(map[string]bool)
	d.mu.Lock()
	for name, m := range d.members {
		if len(m.providers) > 0 {
			want[name] = true
		}
	}
	d.mu.Unlock()
	if len(want) == 0 {
		return nil
	}
	wait := discoverWait
	if deadline, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(deadline))
	}
	inbox := d.b.nc.NewRespInbox()
	answers := make(chan *nats.Msg, len(want)+16)
	sub, err := d.b.nc.ChanSubscribe(inbox, answers)
	if err != nil {
		return nil
	}
	defer func() { _ = sub.Unsubscribe() }()
	q, _ := jsonx.Marshal(discoverQuery{Node: d.b.node, Timeout: max(1, wait.Milliseconds())})
	if err := d.b.nc.PublishRequest(d.b.Subject("discover"), inbox, q); err != nil {
		return nil // the link is down: this node's providers only
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	var got []discoverAnswer
	for len(want) > 0 {
		select {
		case msg := <-answers:
			var a discoverAnswer
			if json.Unmarshal(msg.Data, &a) != nil || !want[a.Node] {
				continue
			}
			delete(want, a.Node)
			got = append(got, a)
		case <-t.C:
			want = nil
		case <-ctx.Done():
			want = nil
		}
	}
	sort.Slice(got, func(i, j int) bool { return got[i].Node < got[j].Node })
	var out []json.RawMessage
	for _, a := range got {
		out = append(out, a.Methods...)
	}
	return out
}

// onDiscover answers another node's query, on a goroutine of its own:
// the providers may take a while to describe themselves.
func (d *directory) onDiscover(msg *nats.Msg) {
	var q discoverQuery
	if json.Unmarshal(msg.Data, &q) != nil || q.Node == d.b.node || msg.Reply == "" || q.Timeout <= 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(q.Timeout)*time.Millisecond*3/4)
	d.serve(msg.Reply, cancel, func() {
		methods := d.h.DescribeProvided(ctx)
		if methods == nil {
			methods = []json.RawMessage{}
		}
		b, _ := jsonx.Marshal(discoverAnswer{Node: d.b.node, Methods: methods})
		_ = d.b.nc.Publish(msg.Reply, b)
	})
}
