package natsbroker

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/internal/jsonx"
	"github.com/switchboard-rpc/switchboard/peer"
)

// This file spans the hub's admin API over the nodes, as presence.go
// spans presence: a node asks every other one on "<prefix>.admin" and
// gathers the answers that come within adminWait; each answers through
// hub.BrokerHandle.ServeAdmin, on a goroutine of its own.

// adminWait bounds how long an admin request waits for the other nodes'
// answers; a node that has not answered by then is left out, and named.
var adminWait = 2 * time.Second

type adminQuery struct {
	Node   string          `json:"node"`
	Op     string          `json:"op"`
	Params json.RawMessage `json:"params,omitempty"`
}

var _ hub.AdminBroker = (*Broker)(nil)
var _ hub.AdminBroker = sequencer{}

// AskNodes implements hub.AdminBroker.
func (b *Broker) AskNodes(ctx context.Context, op string, params []byte) ([]hub.NodeAnswer, error) {
	d := b.dir.Load()
	if d == nil {
		return nil, nil
	}
	return d.askNodes(ctx, op, params)
}

func (d *directory) askNodes(ctx context.Context, op string, params []byte) ([]hub.NodeAnswer, error) {
	want := d.names()
	if len(want) == 0 {
		return nil, nil
	}
	inbox := d.b.nc.NewRespInbox()
	answers := make(chan *nats.Msg, len(want)+16)
	sub, err := d.b.nc.ChanSubscribe(inbox, answers)
	if err != nil {
		return nil, err
	}
	defer func() { _ = sub.Unsubscribe() }()
	q, _ := jsonx.Marshal(adminQuery{Node: d.b.node, Op: op, Params: params})
	if err := d.b.nc.PublishRequest(d.b.Subject("admin"), inbox, q); err != nil {
		return nil, &hub.UnansweredError{Nodes: want} // the link is down
	}
	t := time.NewTimer(adminWait)
	defer t.Stop()
	var out []hub.NodeAnswer
	seen := make(map[string]bool)
	for waiting := len(want); waiting > 0; {
		select {
		case msg := <-answers:
			var a hub.NodeAnswer
			if json.Unmarshal(msg.Data, &a) != nil || a.Node == "" || seen[a.Node] {
				continue
			}
			seen[a.Node] = true
			out = append(out, a)
			if slices.Contains(want, a.Node) {
				waiting--
			}
		case <-t.C:
			return out, unanswered(want, seen)
		case <-ctx.Done():
			return out, unanswered(want, seen)
		}
	}
	return out, nil
}

// unanswered returns the error naming the nodes of want (sorted) that are
// not in seen.
func unanswered(want []string, seen map[string]bool) error {
	var missing []string
	for _, n := range want {
		if !seen[n] {
			missing = append(missing, n)
		}
	}
	return &hub.UnansweredError{Nodes: missing}
}

// onAdmin answers another node's admin request.
func (d *directory) onAdmin(msg *nats.Msg) {
	var q adminQuery
	if json.Unmarshal(msg.Data, &q) != nil || q.Node == d.b.node || msg.Reply == "" {
		return
	}
	d.heard(q.Node)
	ctx, cancel := context.WithTimeout(context.Background(), adminWait)
	d.serve("", cancel, func() {
		a := hub.NodeAnswer{Node: d.b.node}
		res, err := d.h.ServeAdmin(ctx, q.Op, q.Params)
		if err != nil {
			a.Error = peer.ToError(err)
		} else {
			a.Result = res
		}
		b, _ := jsonx.Marshal(a)
		_ = d.b.nc.Publish(msg.Reply, b)
	})
}
