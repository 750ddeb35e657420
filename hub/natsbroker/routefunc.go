package natsbroker

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/internal/jsonx"
)

// This file sends a call to a peer whose node is known without waiting
// for its answer (hub.Directory.RouteFunc): a call of every peer of a
// user or a topic sends one to each peer of the other nodes, and holds
// no goroutine for any. Whoever takes the call out of d.calls ends it,
// once: the answer (onReply), its timeout (a timer), ctx's end, or its
// node being lost.

// asyncCall is a call of RouteFunc waiting for its answer.
type asyncCall struct {
	d     *directory
	inbox string
	node  string
	peer  string
	done  func(json.RawMessage, error)
	timer *time.Timer                 // set before a is in d.calls
	stop  atomic.Pointer[func() bool] // unties it from ctx
}

// RouteFunc implements hub.Directory.
func (d *directory) RouteFunc(ctx context.Context, call hub.RemoteCall, done func(json.RawMessage, error)) {
	if call.Peer == "" || call.Node == "" {
		done(nil, fmt.Errorf("natsbroker: RouteFunc needs a peer and its node"))
		return
	}
	d.mu.Lock()
	m := d.members[call.Node]
	d.mu.Unlock()
	if m == nil {
		done(nil, noPeer(call.Peer))
		return
	}
	req := callRequest{Method: call.Method, Params: call.Params, Notify: call.Notification, Peer: call.Peer, From: d.b.node, Max: call.MaxResult}
	var timeout time.Duration
	if deadline, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(deadline), time.Millisecond)
		req.Timeout = max(1, timeout.Milliseconds())
	}
	body, err := jsonx.Marshal(req)
	if err != nil {
		done(nil, err)
		return
	}
	subject := d.b.Subject("call", call.Node)
	if call.Notification {
		if err := d.b.nc.Publish(subject, body); err != nil {
			done(nil, d.unsent(err, len(body)))
			return
		}
		done(nil, nil)
		return
	}
	a := &asyncCall{d: d, inbox: d.replies + fmt.Sprint(d.nextID.Add(1)), node: call.Node, peer: call.Peer, done: done}
	d.mu.Lock() // whoever finds a in d.calls finds a.timer set
	d.calls[a.inbox] = &pendingCall{async: a}
	if timeout > 0 {
		a.timer = time.AfterFunc(timeout, func() { a.cancel(context.DeadlineExceeded) })
	}
	d.mu.Unlock()
	if err := d.b.nc.PublishRequest(subject, a.inbox, body); err != nil {
		a.end(true, nil, d.unsent(err, len(body)))
		return
	}
	stop := context.AfterFunc(ctx, func() { a.cancel(ctx.Err()) })
	a.stop.Store(&stop)
	d.mu.Lock()
	_, waiting := d.calls[a.inbox]
	d.mu.Unlock()
	if !waiting {
		stop() // ended before stop was stored
	}
}

// cancel ends the call, if it still waits, with err, and tells the peer's
// node to stop it.
func (a *asyncCall) cancel(err error) {
	if a.end(true, nil, err) {
		_ = a.d.b.nc.Publish(a.d.b.Subject("cancel"), []byte(a.inbox))
	}
}

// end ends the call with its outcome if take, having taken it out of
// d.calls, finds it still there (or if !take: the caller took it out),
// and reports whether it did. It takes d.mu only if take.
func (a *asyncCall) end(take bool, res json.RawMessage, err error) bool {
	if take {
		d := a.d
		d.mu.Lock()
		_, ok := d.calls[a.inbox]
		delete(d.calls, a.inbox)
		d.mu.Unlock()
		if !ok {
			return false
		}
	}
	if a.timer != nil {
		a.timer.Stop()
	}
	if stop := a.stop.Load(); stop != nil {
		(*stop)()
	}
	a.done(res, err)
	return true
}

// reply takes in a message of the peer's node: the answer ends the call.
func (a *asyncCall) reply(msg *nats.Msg) {
	if len(msg.Data) == 0 && msg.Header.Get("Status") == "503" { // NATS: no responders
		if a.end(true, nil, noPeer(a.peer)) {
			a.d.drop(a.node)
		}
		return
	}
	var r callReply
	if json.Unmarshal(msg.Data, &r) != nil {
		return
	}
	switch {
	case r.Accepted != "", r.Progress != nil: // no progress is passed on
	case r.NoPeer:
		a.end(true, nil, noPeer(a.peer))
	case r.TooLarge > 0:
		a.end(true, nil, fmt.Errorf("%w: %d bytes", hub.ErrTooLarge, r.TooLarge))
	case r.Error != nil:
		a.end(true, nil, r.Error)
	default:
		a.end(true, r.Result, nil)
	}
}

// lostLocked ends, with -32006, the calls of RouteFunc waiting for an
// answer from node, which is gone. d.mu held.
func (d *directory) lostLocked(node string) {
	for inbox, pc := range d.calls {
		if a := pc.async; a != nil && a.node == node {
			delete(d.calls, inbox)
			a.end(false, nil, errProviderLost)
		}
	}
}
