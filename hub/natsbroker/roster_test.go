package natsbroker_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/switchboard-rpc/switchboard/hub/natsbroker"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
)

// A node started after another's peers joined learns its roster whole;
// then each change as it is made.
func TestRosterLearnedLate(t *testing.T) {
	url := startNATS(t)
	a := startRouteNode(t, url, "a", nil)
	attach(t, a, &peer.Options{}, "alice", nil)
	_, bob := attach(t, a, &peer.Options{}, "bob", nil)
	b := startRouteNode(t, url, "b", nil)
	hasUsers := func(want map[string]int) func() bool {
		return func() bool {
			users, known := natsbroker.RosterOf(b.b, "a")
			return known && maps.Equal(users, want)
		}
	}
	eventually(t, b, "b to learn a's roster", hasUsers(map[string]int{"alice": 1, "bob": 1}))
	a.h.Leave(bob)
	eventually(t, b, "b to learn that bob left a", hasUsers(map[string]int{"alice": 1}))
}

// A node that finds a change of another's roster missing forgets that
// roster (the other node is then asked for every user) and asks for it
// whole; the answer is taken in.
func TestRosterGap(t *testing.T) {
	url := startNATS(t)
	b := startRouteNode(t, url, "b", nil)
	// Node z beats with a roster of no change yet.
	var beat atomic.Value
	beat.Store(`{"node":"z","roster":{"run":"r1","seq":0}}`)
	nc := beating(t, url, func() map[string]string { return map[string]string{"z": beat.Load().(string)} })
	queries := make(chan *nats.Msg, 16)
	sub, err := nc.ChanSubscribe("switchboard.presence", queries)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	eventually(t, b, "b to know z's empty roster", func() bool {
		users, known := natsbroker.RosterOf(b.b, "z")
		return known && len(users) == 0
	})

	// Change 1 is lost; change 2 comes, and z's heartbeats say so.
	beat.Store(`{"node":"z","roster":{"run":"r1","seq":2}}`)
	_ = nc.Publish("switchboard.presence.changed", []byte(`{"run":"r1","seq":2,"join":true,"conn":true,"peer":{"id":"p2","user":"alice","node":"z"}}`))
	var q *nats.Msg
	for q == nil {
		msg := testkit.Recv(t, queries, "b to ask z for its roster")
		var body struct {
			Node   string
			Nodes  []string
			Roster bool
		}
		if json.Unmarshal(msg.Data, &body) == nil && body.Node == "b" && body.Roster && len(body.Nodes) == 1 && body.Nodes[0] == "z" {
			q = msg
		}
	}
	if _, known := natsbroker.RosterOf(b.b, "z"); known {
		t.Fatal("z's roster still known after a gap")
	}
	_ = nc.Publish(q.Reply, []byte(`{"node":"z","roster":{"run":"r1","seq":2,"users":{"alice":1,"bob":1}}}`))
	eventually(t, b, "b to take z's roster in", func() bool {
		users, known := natsbroker.RosterOf(b.b, "z")
		return known && maps.Equal(users, map[string]int{"alice": 1, "bob": 1})
	})
}

// eventuallyPresent waits until n finds want peers on topic in the
// cluster: the other nodes' rosters have reached it.
func eventuallyPresent(t *testing.T, n *node, topic string, want int) {
	t.Helper()
	eventually(t, n, fmt.Sprintf("%s to find %d peers on %s", n.b.Node(), want, topic), func() bool {
		peers, err := n.h.ClusterPresence(t.Context(), topic)
		return err == nil && len(peers) == want
	})
}

// beating connects to url as nodes that do nothing but beat: every
// heartbeat, each node of beats() announces what beats() gives it, until
// the test ends. It returns the connection, for the test to send more.
func beating(t *testing.T, url string, beats func() map[string]string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(func() {
		close(stop)
		wg.Wait()
		nc.Close()
	})
	wg.Go(func() {
		tick := time.NewTicker(heartbeat)
		defer tick.Stop()
		for {
			for node, a := range beats() {
				_ = nc.Publish("switchboard.dir."+node, []byte(a))
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})
	return nc
}
