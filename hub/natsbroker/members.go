package natsbroker

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/internal/jsonx"
	"github.com/switchboard-rpc/switchboard/internal/wildcard"
	"go.uber.org/zap"
)

// This file keeps the members of the cluster, so that the peers of every
// node are addressable (the broker is a hub.Directory; route.go sends the
// calls). The nodes tell each other, on "<prefix>.dir.<node>", which
// methods their peers provide, each time that changes and every
// Options.Heartbeat; a node not heard from for three heartbeats, or that
// said goodbye, is gone, and the calls in flight to it end with -32006.

// DefaultHeartbeat is the default of Options.Heartbeat.
const DefaultHeartbeat = time.Second

// missedHeartbeats is how many heartbeats a node may miss before the
// others take it for gone.
const missedHeartbeats = 3

// announcement is what a node tells the others about its peers.
type announcement struct {
	Node      string         `json:"node"`
	Providers []hub.Provider `json:"providers,omitempty"`
	Bye       bool           `json:"bye,omitempty"`
	Roster    *mark          `json:"roster,omitempty"` // the latest state of its roster (roster.go)
}

// member is another node, as this one knows it.
type member struct {
	providers []hub.Provider
	seen      time.Time
	gone      chan struct{}  // closed when the node is taken for gone
	ours      map[string]int // calls this node has in flight to each provider there
	roster    *roster        // its peers' users and patterns; nil: not known (roster.go)
	behind    uint64         // the change its last heartbeat said it was at, when this node's roster of it was behind
	asked     time.Time      // when this node last asked it for its roster
}

// directory is the state of the broker as a hub.Directory.
type directory struct {
	b        *Broker
	h        *hub.BrokerHandle
	interval time.Duration
	log      *zap.Logger

	mu      sync.Mutex
	members map[string]*member
	updated chan struct{}                 // closed, and replaced, when members change
	serving map[string]context.CancelFunc // calls from other nodes, by reply subject

	replies string                  // "<inbox>.": the subjects the answers to this node's calls come on
	calls   map[string]*pendingCall // this node's calls waiting for answers, by reply subject
	nextID  atomic.Uint64

	// self is this node's own roster, told to the others; its lock is
	// a leaf, taken with the hub's held.
	self struct {
		mu sync.Mutex
		r  *roster
	}
	rosters string // the inbox the other nodes' rosters come on

	changed chan struct{} // 1-buffered: announce now
	stop    chan struct{}
	wg      sync.WaitGroup
	subs    []*nats.Subscription
}

// startDirectory starts telling the other nodes about h's peers and
// listening to theirs.
func (b *Broker) startDirectory(h *hub.BrokerHandle) error {
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
		rosters:  b.nc.NewInbox(),
		changed:  make(chan struct{}, 1),
		stop:     make(chan struct{}),
	}
	d.self.r = newRoster(b.run)
	for subject, fn := range map[string]nats.MsgHandler{
		b.Subject("dir", "*"):            d.onAnnouncement,
		b.Subject("call", b.node):        d.onCall,
		b.Subject("callpeer"):            d.onCall,
		b.Subject("cancel"):              d.onCancel,
		b.Subject("presence"):            d.onPresence,
		b.Subject("presence", "changed"): d.onPresenceChanged,
		b.Subject("discover"):            d.onDiscover,
		b.Subject("admin"):               d.onAdmin,
		d.replies + "*":                  d.onReply,
		d.rosters:                        d.onRoster,
	} {
		sub, err := b.nc.Subscribe(subject, fn)
		if err != nil {
			d.unsubscribe()
			return err
		}
		_ = sub.SetPendingLimits(1<<20, 1<<30)
		d.subs = append(d.subs, sub)
	}
	if b.nc.IsConnected() {
		// Subscribed at the server before Start returns: this node
		// misses no change another node makes after that (roster.go).
		_ = b.nc.FlushTimeout(presenceWait)
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
		d.lostLocked(name)
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
	d.b.markEvents(false)
	for {
		select {
		case <-d.stop:
			return
		case <-d.changed:
			d.announce(false)
		case <-d.b.rl.remark:
			d.b.markEvents(true)
		case now := <-t.C:
			d.announce(false)
			d.b.markEvents(false)
			d.expire(now)
		}
	}
}

// announce tells the other nodes about this one's peers. The state of
// its roster is read and sent under the roster's lock, so that no change
// sent before the announcement is newer than what it says (roster.go).
func (d *directory) announce(bye bool) {
	a := announcement{Node: d.b.node, Bye: bye}
	if !bye {
		a.Providers = d.h.ProvidedMethods()
	}
	d.self.mu.Lock()
	defer d.self.mu.Unlock()
	if !bye {
		a.Roster = &d.self.r.mark
	}
	msg, _ := jsonx.Marshal(a)
	_ = d.b.nc.Publish(d.b.Subject("dir", d.b.node), msg)
}

func (d *directory) expire(now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for name, m := range d.members {
		if now.Sub(m.seen) > missedHeartbeats*d.interval {
			d.log.Warn("cluster node lost", zap.String("peer_node", name))
			close(m.gone)
			d.lostLocked(name)
			delete(d.members, name)
			d.updatedLocked()
			defer d.providedChanged(m.providers, nil)
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
			d.lostLocked(a.Node)
			delete(d.members, a.Node)
			d.updatedLocked()
			defer d.providedChanged(m.providers, nil)
		}
		d.mu.Unlock()
		d.log.Info("cluster node left", zap.String("peer_node", a.Node))
		return
	case m == nil:
		m = d.addLocked(a.Node)
		defer d.Changed() // so that it learns about this one at once
	}
	defer d.providedChanged(m.providers, a.Providers)
	m.providers, m.seen = a.Providers, time.Now()
	ask := d.heardMark(m, a.Roster)
	d.updatedLocked()
	d.mu.Unlock()
	if ask {
		d.askRoster(a.Node)
	}
}

// heard takes node for a member, with no providers yet, if it is not one:
// it was just heard from other than by an announcement.
func (d *directory) heard(node string) {
	d.mu.Lock()
	if d.members[node] != nil {
		d.mu.Unlock()
		return
	}
	d.addLocked(node).seen = time.Now()
	d.updatedLocked()
	d.mu.Unlock()
	d.Changed() // so that it learns about this one at once
}

// addLocked adds node to the members, with d.mu held.
func (d *directory) addLocked(node string) *member {
	m := &member{gone: make(chan struct{}), ours: make(map[string]int)}
	d.members[node] = m
	return m
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
// node's calls of that moment). Of providers as busy, it takes the one
// with fewer of this node's calls: an announced count may be of calls
// that have ended since, this node's own are not. It counts the call in.
func (d *directory) choose(method string) (node, provider string, m *member) {
	d.mu.Lock()
	defer d.mu.Unlock()
	least, leastOurs := -1, 0
	for name, mb := range d.members {
		for _, p := range mb.providers {
			if !provides(p, method) {
				continue
			}
			ours := mb.ours[p.Peer]
			if n := max(p.InFlight, ours); least < 0 || n < least || n == least && ours < leastOurs {
				least, leastOurs, node, provider, m = n, ours, name, p.Peer, mb
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

// drop takes node for gone: NATS knows no subscriber of it.
func (d *directory) drop(node string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if m := d.members[node]; m != nil {
		d.log.Warn("cluster node lost", zap.String("peer_node", node))
		close(m.gone)
		d.lostLocked(node)
		delete(d.members, node)
		d.updatedLocked()
		defer d.providedChanged(m.providers, nil)
	}
}

// nodes returns how many other nodes this one knows.
func (d *directory) nodes() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.members)
}

// names returns the other nodes this one knows, sorted.
func (d *directory) names() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Sorted(maps.Keys(d.members))
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
