// Package membroker links hubs of one process into a cluster: the
// reference implementation of the hub's broker seam, for tests and for
// trying a cluster without a network.
//
//	c := membroker.New(nil)
//	a := c.Node("a")
//	ha := hub.New(&hub.Options{Broker: a.HubBroker()}) // registers ha with a
//	defer a.Close()
//	b := c.Node("b")
//	hb := hub.New(&hub.Options{Broker: b.HubBroker()})
//	defer b.Close()
//	// an event published on ha reaches the subscribers of hb, a method
//	// provided on hb can be called on ha, presence covers both.
//
// Each node's broker is a [hub.Describer]: a [hub.Directory] that reads
// the other nodes' hubs directly (their peers, presence and provided
// methods) and carries calls to them through their [hub.BrokerHandle].
// Events and presence changes reach each node through a queue of its own
// (the hub hands them over with its lock held: they must not wait), which
// one goroutine per node hands to its hub in order.
//
// Without [Options].Sequenced each node numbers the events it delivers,
// as hub/natsbroker over core NATS does; with it, the cluster is one
// stream, as hub/natsbroker with JetStream is: every node delivers every
// event at the same position, and a subscriber can resume on any node
// (from the positions a node has seen: a node that joins later starts at
// the stream's latest position).
//
// hub/brokertest is the suite both this package and hub/natsbroker pass.
package membroker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
)

// DefaultQueue is the default of [Options].Queue: 64 MiB.
const DefaultQueue = 64 << 20

// Options configures a [Cluster]. A nil *Options is valid.
type Options struct {
	// Sequenced makes the cluster one stream of events, whose positions
	// and epoch are the same on every node: its brokers are
	// [hub.Sequencer]s.
	Sequenced bool

	// Queue bounds the bytes of the events and presence changes waiting
	// for one node (each counted with its topic, or its patterns, and
	// itemOverhead more). Beyond it, what comes is lost for that node: it counts them
	// (hub.BrokerStats.Lost) and tells its hub (hub.BrokerHandle.Missed),
	// which closes its subscribers so that they resume and learn what
	// they missed. Default [DefaultQueue].
	Queue int
}

// A Cluster is the nodes linked together. Its methods are safe for
// concurrent use.
type Cluster struct {
	o     Options
	epoch string // the stream's, when sequenced

	mu    sync.RWMutex
	nodes map[string]*Broker // the registered nodes, not closed
	names map[string]bool    // every name given, so that none is given twice
	seq   uint64             // the stream's latest position, when sequenced
}

// New returns a cluster with no node.
func New(o *Options) *Cluster {
	c := &Cluster{nodes: make(map[string]*Broker), names: make(map[string]bool)}
	if o != nil {
		c.o = *o
	}
	if c.o.Queue <= 0 {
		c.o.Queue = DefaultQueue
	}
	var r [4]byte
	_, _ = rand.Read(r[:])
	c.epoch = "mem-" + hex.EncodeToString(r[:])
	return c
}

// Node returns the broker of a new node of the cluster, named name: set
// its HubBroker as the Options.Broker of the hub it links, which joins
// the cluster when [hub.New] registers it. Close the broker when the hub
// is done. Node panics when name was given before.
func (c *Cluster) Node(name string) *Broker {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.names[name] {
		panic(fmt.Sprintf("membroker: node %q exists", name))
	}
	c.names[name] = true
	b := &Broker{c: c, name: name, done: make(chan struct{})}
	b.ctx, b.stop = context.WithCancel(context.Background())
	b.in.kick = make(chan struct{}, 1)
	return b
}

// others returns the registered nodes but b; none when b is not one of
// them (not registered yet, or closed).
func (c *Cluster) others(b *Broker) []*Broker {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.nodes[b.name] != b {
		return nil
	}
	out := make([]*Broker, 0, len(c.nodes))
	for _, n := range c.nodes {
		if n != b {
			out = append(out, n)
		}
	}
	return out
}

// sequence appends an event to the stream: every node, b's too, gets it
// at its position, in the order of positions.
func (c *Cluster) sequence(b *Broker, topic string, data []byte) (uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.nodes[b.name] != b {
		return 0, fmt.Errorf("membroker: node %s is not in the cluster", b.name)
	}
	c.seq++
	for _, n := range c.nodes {
		n.in.push(item{seq: c.seq, topic: topic, data: data}, c.o.Queue)
	}
	return c.seq, nil
}
