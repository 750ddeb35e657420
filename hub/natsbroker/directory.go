package natsbroker

import (
	"context"
	"encoding/json"
	"slices"
	"sort"

	"github.com/switchboard-rpc/switchboard/hub"
)

// The broker as a hub.Directory: until Start, it knows no other node.

// Provides implements hub.Directory.
func (b *Broker) Provides(method string) bool {
	d := b.dir.Load()
	return d != nil && d.Provides(method)
}

// Route implements hub.Directory.
func (b *Broker) Route(ctx context.Context, call hub.RemoteCall) (json.RawMessage, error) {
	d := b.dir.Load()
	if d == nil {
		return nil, errNoProvider
	}
	return d.Route(ctx, call)
}

// RouteFunc implements hub.Directory.
func (b *Broker) RouteFunc(ctx context.Context, call hub.RemoteCall, done func(json.RawMessage, error)) {
	d := b.dir.Load()
	if d == nil {
		done(nil, noPeer(call.Peer))
		return
	}
	d.RouteFunc(ctx, call, done)
}

// Peers implements hub.Directory.
func (b *Broker) Peers(ctx context.Context, topic string) ([]hub.PeerInfo, error) {
	d := b.dir.Load()
	if d == nil {
		return nil, nil
	}
	return d.Peers(ctx, topic)
}

// UserPeers implements hub.Directory.
func (b *Broker) UserPeers(ctx context.Context, user string) ([]hub.PeerInfo, error) {
	d := b.dir.Load()
	if d == nil {
		return nil, nil
	}
	return d.UserPeers(ctx, user)
}

// UserChanged implements hub.Directory.
func (b *Broker) UserChanged(join bool, who hub.PeerInfo) {
	if d := b.dir.Load(); d != nil {
		d.UserChanged(join, who)
	}
}

// Changed implements hub.Directory.
func (b *Broker) Changed() {
	if d := b.dir.Load(); d != nil {
		d.Changed()
	}
}

// PresenceChanged implements hub.Directory.
func (b *Broker) PresenceChanged(join bool, who hub.PeerInfo, changed, others []string) {
	if d := b.dir.Load(); d != nil {
		d.PresenceChanged(join, who, changed, others)
	}
}

// DescribeRemote implements hub.Describer.
func (b *Broker) DescribeRemote(ctx context.Context) []json.RawMessage {
	d := b.dir.Load()
	if d == nil {
		return nil
	}
	return d.DescribeRemote(ctx)
}

var _ hub.Describer = (*Broker)(nil)
var _ hub.Describer = sequencer{}

// Member is another node of the cluster, as this one last heard of it.
type Member struct {
	Node      string         // its name
	Providers []hub.Provider // its peers that provide methods
}

// Members returns the other nodes this one knows, sorted by name: those
// it heard from within the last three heartbeats.
func (b *Broker) Members() []Member {
	d := b.dir.Load()
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]Member, 0, len(d.members))
	for name, m := range d.members {
		out = append(out, Member{Node: name, Providers: m.providers})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out
}

// RemoteProvided implements hub.ProvidedLister: the names and patterns
// the peers of the other nodes provide, as they last announced them.
func (b *Broker) RemoteProvided() []string {
	d := b.dir.Load()
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for _, m := range d.members {
		for _, p := range m.providers {
			out = append(out, p.Methods...)
		}
	}
	return out
}

var (
	_ hub.ProvidedLister = (*Broker)(nil)
	_ hub.ProvidedLister = sequencer{}
)

// providedChanged tells the hub when a node's providers, from before to
// after, provide other methods (their calls in flight aside), for
// hub.Hub.WatchProvided. It does not block.
func (d *directory) providedChanged(before, after []hub.Provider) {
	if !sameMethods(before, after) {
		d.h.RemoteProvidedChanged()
	}
}

// sameMethods reports whether a and b are the same providers of the same
// methods; a node announces them sorted.
func sameMethods(a, b []hub.Provider) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Peer != b[i].Peer || !slices.Equal(a[i].Methods, b[i].Methods) {
			return false
		}
	}
	return true
}
