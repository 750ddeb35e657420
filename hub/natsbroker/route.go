package natsbroker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/internal/jsonx"
	"github.com/switchboard-rpc/switchboard/peer"
)

// This file sends calls across nodes (members.go keeps the nodes and what
// they provide). A call of a method that another node's peer provides is
// a request on "<prefix>.call.<node>" with a reply subject of the caller's
// own; the callee node forwards it to its provider and sends back, on that
// subject, the provider's rpc.progress data and then its answer. A call to
// a peer by id goes to its node on "<prefix>.call.<node>" when the caller
// knows the node (from presence), else to every node on
// "<prefix>.callpeer"; the peer's node answers, the others say they do
// not have it. Cancelling is a message on
// "<prefix>.cancel" naming the reply subject.

// cancelWait bounds how long a cancelled call waits for the provider's
// answer (normally -32002) to pass back.
const cancelWait = 5 * time.Second

// callRequest is a call sent to another node.
type callRequest struct {
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
	Notify  bool            `json:"notify,omitempty"`
	Peer    string          `json:"peer,omitempty"`
	From    string          `json:"from"`                 // the calling node
	Timeout int64           `json:"timeout_ms,omitempty"` // what is left of the caller's time
	Max     int             `json:"max_result,omitempty"` // hub.RemoteCall.MaxResult
}

// callReply is one message back to the caller of a callRequest.
type callReply struct {
	Accepted string          `json:"accepted,omitempty"` // the node that has the peer
	NoPeer   bool            `json:"nopeer,omitempty"`
	Progress json.RawMessage `json:"progress,omitempty"`
	Result   json.RawMessage `json:"result,omitempty"`
	Error    *peer.Error     `json:"error,omitempty"`
	TooLarge int             `json:"too_large,omitempty"` // the result's size, over callRequest.Max: not sent
}

var (
	errNoProvider   = &peer.Error{Code: peer.CodeMethodNotFound, Message: "Method not found"}
	errProviderLost = &peer.Error{Code: peer.CodeProviderLost, Message: "Provider lost"}
)

// Route implements hub.Directory. A call sent to a node that NATS says
// has no subscriber (it died, and its connection with it) never ran: the
// node is taken for gone at once, and the call goes to another provider.
func (d *directory) Route(ctx context.Context, call hub.RemoteCall) (json.RawMessage, error) {
	for {
		res, err, gone := d.route(ctx, call)
		if !gone {
			return res, err
		}
	}
}

// route sends call to one node and waits for its answer. nodeGone
// reports that NATS knew no subscriber to the node's subject.
func (d *directory) route(ctx context.Context, call hub.RemoteCall) (_ json.RawMessage, _ error, nodeGone bool) {
	req := callRequest{Method: call.Method, Params: call.Params, Notify: call.Notification, Peer: call.Peer, From: d.b.node, Max: call.MaxResult}
	if deadline, ok := ctx.Deadline(); ok {
		req.Timeout = max(1, time.Until(deadline).Milliseconds())
	}
	var subject, node string
	var gone <-chan struct{}
	var recheck <-chan time.Time // a call to a peer: whether every node said no
	if call.Peer == "" {
		var provider string
		var m *member
		node, provider, m = d.choose(call.Method)
		if m == nil {
			return nil, errNoProvider, false
		}
		defer d.done(m, provider)
		subject, gone = d.b.Subject("call", node), m.gone
	} else if call.Node != "" {
		// The caller knows the peer's node: ask that one only.
		d.mu.Lock()
		m := d.members[call.Node]
		d.mu.Unlock()
		if m == nil {
			return nil, noPeer(call.Peer), false
		}
		node, subject, gone = call.Node, d.b.Subject("call", call.Node), m.gone
	} else {
		if d.nodes() == 0 {
			return nil, noPeer(call.Peer), false
		}
		subject = d.b.Subject("callpeer")
		t := time.NewTicker(d.interval)
		defer t.Stop()
		recheck = t.C
	}
	body, err := jsonx.Marshal(req)
	if err != nil {
		return nil, err, false
	}
	if call.Notification {
		if err := d.b.nc.Publish(subject, body); err != nil {
			return nil, d.unsent(err, len(body)), false
		}
		return nil, nil, false
	}

	inbox, replies := d.await()
	defer d.forget(inbox)
	if err := d.b.nc.PublishRequest(subject, inbox, body); err != nil {
		return nil, d.unsent(err, len(body)), false
	}

	said := 0 // nodes that said they do not have call.Peer
	var expired <-chan time.Time
	done := ctx.Done()
	for {
		select {
		case msg := <-replies:
			if len(msg.Data) == 0 && msg.Header.Get("Status") == "503" && node != "" { // NATS: no responders
				d.drop(node)
				return nil, nil, true
			}
			var r callReply
			if err := json.Unmarshal(msg.Data, &r); err != nil {
				continue
			}
			switch {
			case r.NoPeer:
				if said++; call.Node != "" || gone == nil && said >= d.nodes() {
					return nil, noPeer(call.Peer), false
				}
			case r.Accepted != "":
				gone = d.goneOf(r.Accepted)
			case r.Progress != nil:
				if call.Progress != nil {
					call.Progress(r.Progress)
				}
			case r.TooLarge > 0:
				return nil, fmt.Errorf("%w: %d bytes", hub.ErrTooLarge, r.TooLarge), false
			case r.Error != nil:
				return nil, r.Error, false
			default:
				return r.Result, nil, false
			}
		case <-recheck:
			if gone == nil && said >= d.nodes() {
				return nil, noPeer(call.Peer), false
			}
		case <-gone:
			return nil, errProviderLost, false
		case <-done:
			_ = d.b.nc.Publish(d.b.Subject("cancel"), []byte(inbox))
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return nil, ctx.Err(), false
			}
			// Cancelled: the provider's answer, normally -32002, is
			// the one to pass back.
			done = nil
			t := time.NewTimer(cancelWait)
			defer t.Stop()
			expired = t.C
		case <-expired:
			return nil, ctx.Err(), false
		}
	}
}

// pendingCall is a call of this node's waiting for its answers: on
// replies, or, for a call of RouteFunc, by async.
type pendingCall struct {
	replies chan *nats.Msg
	quit    chan struct{} // closed when the call stops waiting
	async   *asyncCall
}

// unsent is the error of a call that could not be sent to another node:
// params larger than NATS carries (its max_payload, 1 MB by default, while
// a peer's message may be as large as the hub's message size limit) are
// the caller's to shrink, -32602, which no retry mends; anything else
// means the link is down, and the call did not reach its provider.
func (d *directory) unsent(err error, size int) error {
	if errors.Is(err, nats.ErrMaxPayload) {
		return peer.Errorf(peer.CodeInvalidParams,
			"Invalid params: the call of %d bytes is over what the cluster carries (%d bytes)", size, d.b.nc.MaxPayload())
	}
	return errProviderLost
}

// await registers a call and returns the subject its answers come on and
// the channel they arrive on.
func (d *directory) await() (string, <-chan *nats.Msg) {
	subject := d.replies + strconv.FormatUint(d.nextID.Add(1), 10)
	pc := &pendingCall{replies: make(chan *nats.Msg, 64), quit: make(chan struct{})}
	d.mu.Lock()
	d.calls[subject] = pc
	d.mu.Unlock()
	return subject, pc.replies
}

func (d *directory) forget(subject string) {
	d.mu.Lock()
	pc := d.calls[subject]
	delete(d.calls, subject)
	d.mu.Unlock()
	if pc != nil {
		close(pc.quit)
	}
}

// onReply hands an answer to the call waiting for it. Progress beyond
// what the call has room for is dropped, as a slow caller's would be;
// the final answer waits for room, or for the call to stop waiting.
func (d *directory) onReply(msg *nats.Msg) {
	d.mu.Lock()
	pc := d.calls[msg.Subject]
	d.mu.Unlock()
	switch {
	case pc == nil:
		return
	case pc.async != nil:
		pc.async.reply(msg)
		return
	}
	select {
	case pc.replies <- msg:
		return
	default:
	}
	if bytes.HasPrefix(msg.Data, []byte(`{"progress":`)) {
		return
	}
	select {
	case pc.replies <- msg:
	case <-pc.quit:
	}
}

func noPeer(id string) error {
	return peer.Errorf(peer.CodeNoSuchPeer, "No such peer: %s", id)
}

// onCall serves a call from another node, on a goroutine of its own.
func (d *directory) onCall(msg *nats.Msg) {
	var req callRequest
	if err := json.Unmarshal(msg.Data, &req); err != nil || req.Method == "" || req.From == d.b.node {
		return
	}
	if req.Peer != "" {
		if !d.h.HasPeer(req.Peer) {
			d.reply(msg.Reply, callReply{NoPeer: true})
			return
		}
		d.reply(msg.Reply, callReply{Accepted: d.b.node})
	}
	ctx, cancel := context.WithCancel(context.Background())
	if req.Timeout > 0 {
		cancel()
		ctx, cancel = context.WithTimeout(context.Background(), time.Duration(req.Timeout)*time.Millisecond)
	}
	served := d.serve(msg.Reply, cancel, func() {
		call := hub.RemoteCall{Method: req.Method, Params: req.Params, Notification: req.Notify || msg.Reply == "", Peer: req.Peer}
		if !call.Notification {
			call.Progress = func(data json.RawMessage) { d.reply(msg.Reply, callReply{Progress: data}) }
		}
		res, err := d.h.ServeRemoteCall(ctx, call)
		if call.Notification {
			return
		}
		if err != nil {
			d.reply(msg.Reply, callReply{Error: peer.ToError(err)})
			return
		}
		if res == nil {
			res = json.RawMessage("null")
		}
		if req.Max > 0 && len(res) > req.Max {
			d.reply(msg.Reply, callReply{TooLarge: len(res)}) // it would be left out
			return
		}
		d.reply(msg.Reply, callReply{Result: res})
	})
	if !served {
		d.reply(msg.Reply, callReply{Error: errProviderLost})
	}
}

// serve runs fn on a goroutine of its own, counted in d.wg, to answer a
// request whose reply subject is reply (none for a notification): close,
// and rpc.cancel naming reply, end it through cancel, which is called
// when fn returns. It reports false, having called cancel, when the
// directory is closing.
func (d *directory) serve(reply string, cancel context.CancelFunc, fn func()) bool {
	d.mu.Lock()
	select {
	case <-d.stop:
		d.mu.Unlock()
		cancel()
		return false
	default:
	}
	if reply != "" {
		d.serving[reply] = cancel
	}
	d.wg.Add(1)
	d.mu.Unlock()
	go func() {
		defer d.wg.Done()
		defer func() {
			d.mu.Lock()
			delete(d.serving, reply)
			d.mu.Unlock()
			cancel()
		}()
		fn()
	}()
	return true
}

// reply sends r on subject. An answer larger than NATS carries (its
// max_payload, 1 MB by default, while a peer's may be as large as the
// hub's message size limit) is replaced by an error saying so: NATS would
// refuse it, and the caller would wait for nothing until its timeout.
func (d *directory) reply(subject string, r callReply) {
	if subject == "" {
		return
	}
	b, _ := jsonx.Marshal(r)
	if limit := d.b.nc.MaxPayload(); int64(len(b)) > limit && r.Progress == nil {
		b, _ = jsonx.Marshal(callReply{Error: peer.Errorf(peer.CodeInternalError,
			"Internal error: the answer of %d bytes is over what the cluster carries (%d bytes)", len(b), limit)})
	}
	_ = d.b.nc.Publish(subject, b)
}

// onCancel cancels a call this node serves for another.
func (d *directory) onCancel(msg *nats.Msg) {
	d.mu.Lock()
	cancel := d.serving[string(msg.Data)]
	d.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}
