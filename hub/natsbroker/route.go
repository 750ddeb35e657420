package natsbroker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/internal/wildcard"
	"github.com/switchboard-rpc/switchboard/peer"
	"go.uber.org/zap"
)

// This file makes the peers of every node addressable: the broker is a
// hub.Directory. The nodes tell each other, on "<prefix>.dir.<node>",
// which methods their peers provide, each time that changes and every
// Options.Heartbeat; a node
// not heard from for three heartbeats, or that said goodbye, is gone, and
// the calls in flight to it end with -32006.
//
// A call of a method that another node's peer provides is a request on
// "<prefix>.call.<node>" with a reply subject of the caller's own; the
// callee node forwards it to its provider and sends back, on that
// subject, the provider's rpc.progress data and then its answer. A call to
// a peer by id goes to every node on "<prefix>.callpeer"; the peer's node
// answers, the others say they do not have it. Cancelling is a message on
// "<prefix>.cancel" naming the reply subject.

// DefaultHeartbeat is the default of Options.Heartbeat.
const DefaultHeartbeat = time.Second

// missedHeartbeats is how many heartbeats a node may miss before the
// others take it for gone.
const missedHeartbeats = 3

// cancelWait bounds how long a cancelled call waits for the provider's
// answer (normally -32002) to pass back.
const cancelWait = 5 * time.Second

// announcement is what a node tells the others about its peers.
type announcement struct {
	Node      string         `json:"node"`
	Providers []hub.Provider `json:"providers,omitempty"`
	Bye       bool           `json:"bye,omitempty"`
}

// member is another node, as this one knows it.
type member struct {
	providers []hub.Provider
	seen      time.Time
	gone      chan struct{}  // closed when the node is taken for gone
	ours      map[string]int // calls this node has in flight to each provider there
}

// callRequest is a call sent to another node.
type callRequest struct {
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
	Notify  bool            `json:"notify,omitempty"`
	Peer    string          `json:"peer,omitempty"`
	From    string          `json:"from"`                 // the calling node
	Timeout int64           `json:"timeout_ms,omitempty"` // what is left of the caller's time
}

// callReply is one message back to the caller of a callRequest.
type callReply struct {
	Accepted string          `json:"accepted,omitempty"` // the node that has the peer
	NoPeer   bool            `json:"nopeer,omitempty"`
	Progress json.RawMessage `json:"progress,omitempty"`
	Result   json.RawMessage `json:"result,omitempty"`
	Error    *peer.Error     `json:"error,omitempty"`
}

// directory is the state of the broker as a hub.Directory.
type directory struct {
	b        *Broker
	h        *hub.Hub
	interval time.Duration
	log      *zap.Logger

	mu      sync.Mutex
	members map[string]*member
	updated chan struct{}                 // closed, and replaced, when members change
	serving map[string]context.CancelFunc // calls from other nodes, by reply subject

	replies string                  // "<inbox>.": the subjects the answers to this node's calls come on
	calls   map[string]*pendingCall // this node's calls waiting for answers, by reply subject
	nextID  atomic.Uint64

	changed chan struct{} // 1-buffered: announce now
	stop    chan struct{}
	wg      sync.WaitGroup
	subs    []*nats.Subscription
}

// startDirectory starts telling the other nodes about h's peers and
// listening to theirs.
func (b *Broker) startDirectory(h *hub.Hub) error {
	d := &directory{
		b:        b,
		h:        h,
		interval: b.heartbeat,
		log:      b.log,
		members:  make(map[string]*member),
		serving:  make(map[string]context.CancelFunc),
		updated:  make(chan struct{}),
		replies:  b.nc.NewInbox() + ".",
		calls:    make(map[string]*pendingCall),
		changed:  make(chan struct{}, 1),
		stop:     make(chan struct{}),
	}
	for subject, fn := range map[string]nats.MsgHandler{
		b.Subject("dir", "*"):            d.onAnnouncement,
		b.Subject("call", b.node):        d.onCall,
		b.Subject("callpeer"):            d.onCall,
		b.Subject("cancel"):              d.onCancel,
		b.Subject("presence"):            d.onPresence,
		b.Subject("presence", "changed"): d.onPresenceChanged,
		d.replies + "*":                  d.onReply,
	} {
		sub, err := b.nc.Subscribe(subject, fn)
		if err != nil {
			d.unsubscribe()
			return err
		}
		_ = sub.SetPendingLimits(1<<20, 1<<30)
		d.subs = append(d.subs, sub)
	}
	b.dir.Store(d)
	d.wg.Go(d.loop)
	return nil
}

func (d *directory) unsubscribe() {
	for _, s := range d.subs {
		_ = s.Unsubscribe()
	}
}

// close says goodbye, stops the heartbeats and the calls being served,
// and waits for them.
func (d *directory) close() {
	d.unsubscribe()
	d.mu.Lock()
	close(d.stop)
	for _, cancel := range d.serving {
		cancel()
	}
	d.mu.Unlock()
	d.wg.Wait()
	d.announce(true)
	d.mu.Lock()
	for name, m := range d.members {
		close(m.gone)
		delete(d.members, name)
	}
	d.mu.Unlock()
}

// loop announces this node every interval and when it changes, and takes
// the nodes not heard from for missedHeartbeats intervals for gone.
func (d *directory) loop() {
	t := time.NewTicker(d.interval)
	defer t.Stop()
	d.announce(false)
	for {
		select {
		case <-d.stop:
			return
		case <-d.changed:
			d.announce(false)
		case now := <-t.C:
			d.announce(false)
			d.expire(now)
		}
	}
}

// announce tells the other nodes about this one's peers.
func (d *directory) announce(bye bool) {
	a := announcement{Node: d.b.node, Bye: bye}
	if !bye {
		a.Providers = d.h.ProvidedMethods()
	}
	msg, _ := json.Marshal(a)
	_ = d.b.nc.Publish(d.b.Subject("dir", d.b.node), msg)
}

func (d *directory) expire(now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for name, m := range d.members {
		if now.Sub(m.seen) > missedHeartbeats*d.interval {
			d.log.Warn("cluster node lost", zap.String("peer_node", name))
			close(m.gone)
			delete(d.members, name)
			d.updatedLocked()
		}
	}
}

// updatedLocked wakes whoever waits for the members to change; d.mu held.
func (d *directory) updatedLocked() {
	close(d.updated)
	d.updated = make(chan struct{})
}

// onAnnouncement takes in what another node says about its peers.
func (d *directory) onAnnouncement(msg *nats.Msg) {
	var a announcement
	if err := json.Unmarshal(msg.Data, &a); err != nil || a.Node == "" || a.Node == d.b.node {
		return
	}
	d.mu.Lock()
	m := d.members[a.Node]
	switch {
	case a.Bye:
		if m != nil {
			close(m.gone)
			delete(d.members, a.Node)
			d.updatedLocked()
		}
		d.mu.Unlock()
		d.log.Info("cluster node left", zap.String("peer_node", a.Node))
		return
	case m == nil:
		m = &member{gone: make(chan struct{}), ours: make(map[string]int)}
		d.members[a.Node] = m
		defer d.Changed() // so that it learns about this one at once
	}
	m.providers, m.seen = a.Providers, time.Now()
	d.updatedLocked()
	d.mu.Unlock()
}

// Changed implements hub.Directory.
func (d *directory) Changed() {
	select {
	case d.changed <- struct{}{}:
	default:
	}
}

// Provides implements hub.Directory.
func (d *directory) Provides(method string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, m := range d.members {
		for _, p := range m.providers {
			for _, pattern := range p.Methods {
				if wildcard.Match(pattern, method) {
					return true
				}
			}
		}
	}
	return false
}

// choose returns the node to send a call of method to: the one whose
// least busy provider has the fewest calls in flight as far as this node
// knows: the count its node last announced, or the calls this node has in
// flight to it, whichever is more (the announced count includes this
// node's calls of that moment). It counts the call in.
func (d *directory) choose(method string) (node, provider string, m *member) {
	d.mu.Lock()
	defer d.mu.Unlock()
	least := -1
	for name, mb := range d.members {
		for _, p := range mb.providers {
			if !provides(p, method) {
				continue
			}
			if n := max(p.InFlight, mb.ours[p.Peer]); least < 0 || n < least {
				least, node, provider, m = n, name, p.Peer, mb
			}
		}
	}
	if m != nil {
		m.ours[provider]++
	}
	return node, provider, m
}

func provides(p hub.Provider, method string) bool {
	for _, pattern := range p.Methods {
		if wildcard.Match(pattern, method) {
			return true
		}
	}
	return false
}

func (d *directory) done(m *member, provider string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if m.ours[provider]--; m.ours[provider] <= 0 {
		delete(m.ours, provider)
	}
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
	req := callRequest{Method: call.Method, Params: call.Params, Notify: call.Notification, Peer: call.Peer, From: d.b.node}
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
	} else {
		if d.nodes() == 0 {
			return nil, noPeer(call.Peer), false
		}
		subject = d.b.Subject("callpeer")
		t := time.NewTicker(d.interval)
		defer t.Stop()
		recheck = t.C
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err, false
	}
	if call.Notification {
		if err := d.b.nc.Publish(subject, body); err != nil {
			return nil, errProviderLost, false
		}
		return nil, nil, false
	}

	inbox, replies := d.await()
	defer d.forget(inbox)
	if err := d.b.nc.PublishRequest(subject, inbox, body); err != nil {
		return nil, errProviderLost, false
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
				if said++; gone == nil && said >= d.nodes() {
					return nil, noPeer(call.Peer), false
				}
			case r.Accepted != "":
				gone = d.goneOf(r.Accepted)
			case r.Progress != nil:
				if call.Progress != nil {
					call.Progress(r.Progress)
				}
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

// pendingCall is a call of this node's waiting for its answers.
type pendingCall struct {
	replies chan *nats.Msg
	quit    chan struct{} // closed when the call stops waiting
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
	if pc == nil {
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
	return peer.Errorf(peer.CodeMethodNotFound, "Method not found: no peer %s", id)
}

// drop takes node for gone: NATS knows no subscriber of it.
func (d *directory) drop(node string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if m := d.members[node]; m != nil {
		d.log.Warn("cluster node lost", zap.String("peer_node", node))
		close(m.gone)
		delete(d.members, node)
		d.updatedLocked()
	}
}

// nodes returns how many other nodes this one knows.
func (d *directory) nodes() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.members)
}

// goneOf returns the channel closed when node is gone (closed already
// when it is not known).
func (d *directory) goneOf(node string) <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if m := d.members[node]; m != nil {
		return m.gone
	}
	ch := make(chan struct{})
	close(ch)
	return ch
}

// onCall serves a call from another node, on a goroutine of its own.
func (d *directory) onCall(msg *nats.Msg) {
	var req callRequest
	if err := json.Unmarshal(msg.Data, &req); err != nil || req.Method == "" || req.From == d.b.node {
		return
	}
	if req.Peer != "" {
		if d.h.Peer(req.Peer) == nil {
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
	d.mu.Lock()
	select {
	case <-d.stop:
		d.mu.Unlock()
		cancel()
		d.reply(msg.Reply, callReply{Error: errProviderLost})
		return
	default:
	}
	if msg.Reply != "" {
		d.serving[msg.Reply] = cancel
	}
	d.wg.Add(1)
	d.mu.Unlock()
	go func() {
		defer d.wg.Done()
		defer func() {
			d.mu.Lock()
			delete(d.serving, msg.Reply)
			d.mu.Unlock()
			cancel()
		}()
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
		d.reply(msg.Reply, callReply{Result: res})
	}()
}

func (d *directory) reply(subject string, r callReply) {
	if subject == "" {
		return
	}
	b, _ := json.Marshal(r)
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
