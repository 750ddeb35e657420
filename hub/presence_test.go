package hub_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/internal/hubtest"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
)

// note is an rpc.join or rpc.leave a watcher received.
type note struct {
	Method string
	Topic  string
	Peer   hub.PeerInfo
}

func (n note) String() string {
	return fmt.Sprintf("%s %s %s/%s", n.Method, n.Topic, n.Peer.ID, n.Peer.User)
}

// watcher is a client that records presence notifications.
type watcher struct {
	*client
	notes chan note
}

func connectWatcher(t *testing.T, h *hub.Hub, identity any) *watcher {
	t.Helper()
	notes := make(chan note, 100)
	router := routerFunc(func(method string) (peer.Handler, peer.Mode) {
		if method != "rpc.join" && method != "rpc.leave" {
			return nil, peer.Concurrent
		}
		return peer.HandlerFunc(func(_ context.Context, req *peer.Request) (any, error) {
			n := note{Method: req.Method}
			var p struct {
				Topic string
				Peer  hub.PeerInfo
			}
			if err := json.Unmarshal(req.Params, &p); err != nil {
				return nil, err
			}
			n.Topic, n.Peer = p.Topic, p.Peer
			notes <- n
			return nil, nil
		}), peer.Inline
	})
	return &watcher{connect(t, h, identity, router), notes}
}

func (w *watcher) next(t *testing.T) note {
	t.Helper()
	return testkit.Recv(t, w.notes, "a presence notification")
}

func (w *watcher) none(t *testing.T) {
	t.Helper()
	nonePending(t, w, w.notes, "unexpected %v")
}

func presence(t *testing.T, c *client, topic string) []hub.PeerInfo {
	t.Helper()
	var res struct{ Peers []hub.PeerInfo }
	if err := c.Call(ctx(t), "rpc.presence", map[string]string{"topic": topic}, &res); err != nil {
		t.Fatalf("presence %s: %v", topic, err)
	}
	return res.Peers
}

type stringer struct{ name string }

func (s stringer) String() string { return s.name }

func TestPresenceList(t *testing.T) {
	h := hub.New(&hub.Options{Policy: hub.AllowAll})
	alice := connect(t, h, "alice", nil)
	bob := connect(t, h, stringer{"bob"}, nil)
	anon := connect(t, h, struct{ Token string }{"s3cret"}, nil)
	subscribe(t, alice, []string{"chat.room1"})
	subscribe(t, bob, []string{"chat.*", "chat.>"})
	subscribe(t, anon, []string{">"})

	want := []hub.PeerInfo{{ID: alice.p.ID(), User: "alice"}, {ID: bob.p.ID(), User: "bob"}, {ID: anon.p.ID()}}
	slices.SortFunc(want, func(a, b hub.PeerInfo) int { return cmpString(a.ID, b.ID) })
	if got := presence(t, alice, "chat.room1"); !slices.Equal(got, want) {
		t.Fatalf("presence = %v, want %v", got, want)
	}
	if got := presence(t, alice, "chat.room2.x"); len(got) != 2 {
		t.Fatalf("chat.room2.x: %v, want bob (chat.>) and anon", got)
	}
	if got := presence(t, alice, "news"); len(got) != 1 || got[0].ID != anon.p.ID() {
		t.Fatalf("news: %v", got)
	}
	// No wildcards; by position works too.
	hubtest.WantCode(t, alice.Call(ctx(t), "rpc.presence", []string{"chat.*"}, nil), peer.CodeInvalidParams)
	var res struct{ Peers []hub.PeerInfo }
	if err := alice.Call(ctx(t), "rpc.presence", []string{"other.x"}, &res); err != nil || len(res.Peers) != 1 {
		t.Fatalf("by position: %v, %v", res, err)
	}

	h.Leave(bob.p)
	if got := presence(t, alice, "chat.room1"); len(got) != 2 {
		t.Fatalf("after bob left: %v", got)
	}
	peers, err := h.Presence("chat.room1")
	if err != nil || len(peers) != 2 {
		t.Fatalf("Hub.Presence = %v, %v", peers, err)
	}
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func TestPresencePolicy(t *testing.T) {
	h := hub.New(nil) // DefaultPolicy: subscribe yes, presence no
	a := connect(t, h, nil, nil)
	hubtest.WantCode(t, a.Call(ctx(t), "rpc.presence", []string{"x"}, nil), peer.CodeUnauthorized)
	hubtest.WantCode(t, a.Call(ctx(t), "rpc.subscribe", map[string]any{"topic": "x", "presence": true}, nil), peer.CodeUnauthorized)
	if got := a.p.Topics(); len(got) != 0 {
		t.Fatalf("refused subscribe left %q", got)
	}
	subscribe(t, a, map[string]any{"topic": "x", "presence": false})
}

func TestJoinLeave(t *testing.T) {
	h := hub.New(&hub.Options{Policy: hub.AllowAll})
	room := connectWatcher(t, h, "watcher")
	lobby := connectWatcher(t, h, nil)
	subscribe(t, room.client, map[string]any{"topic": "chat.room1", "presence": true})
	subscribe(t, lobby.client, map[string]any{"topic": "chat.*", "presence": true})
	// The lobby's own subscription overlaps the room: it joined it.
	if n := room.next(t); n.String() != "rpc.join chat.room1 "+lobby.p.ID()+"/" {
		t.Fatalf("got %v", n)
	}
	lobby.none(t) // not told of itself, nor of the room's earlier subscription

	y := connect(t, h, "yann", nil)
	id := y.p.ID()
	subscribe(t, y, []string{"chat.room1"})
	if n := room.next(t); n.String() != "rpc.join chat.room1 "+id+"/yann" {
		t.Fatalf("room got %v", n)
	}
	if n := lobby.next(t); n.String() != "rpc.join chat.* "+id+"/yann" {
		t.Fatalf("lobby got %v", n)
	}
	// Present already: no second join.
	subscribe(t, y, []string{"chat.>", "news"})
	room.none(t)
	lobby.none(t)
	// Still present through chat.>: no leave.
	if err := y.Call(ctx(t), "rpc.unsubscribe", []string{"chat.room1"}, nil); err != nil {
		t.Fatal(err)
	}
	room.none(t)
	lobby.none(t)
	if err := y.Call(ctx(t), "rpc.unsubscribe", []string{"chat.>"}, nil); err != nil {
		t.Fatal(err)
	}
	for _, w := range []*watcher{room, lobby} {
		if n := w.next(t); n.Method != "rpc.leave" || n.Peer.ID != id {
			t.Fatalf("got %v", n)
		}
	}

	// A disconnect is a leave.
	z := connect(t, h, nil, nil)
	subscribe(t, z, []string{"chat.room9"})
	if n := lobby.next(t); n.String() != "rpc.join chat.* "+z.p.ID()+"/" {
		t.Fatalf("lobby got %v", n)
	}
	room.none(t) // chat.room9 is not chat.room1
	h.Leave(z.p)
	if n := lobby.next(t); n.String() != "rpc.leave chat.* "+z.p.ID()+"/" {
		t.Fatalf("lobby got %v", n)
	}

	// Unsubscribed, a watcher is told nothing more.
	if err := lobby.Call(ctx(t), "rpc.unsubscribe", []string{"chat.*"}, nil); err != nil {
		t.Fatal(err)
	}
	if n := room.next(t); n.String() != "rpc.leave chat.room1 "+lobby.p.ID()+"/" {
		t.Fatalf("room got %v", n)
	}
	subscribe(t, y, []string{"chat.room1"})
	room.next(t)
	lobby.none(t)
}

// nonePending fails the test with format (given what ch holds) if ch
// holds anything once a round trip on c has flushed whatever the hub
// sent before it.
func nonePending[T any](t *testing.T, c interface {
	Call(ctx context.Context, method string, params, result any) error
}, ch <-chan T, format string) {
	t.Helper()
	if err := c.Call(ctx(t), "rpc.ping", nil, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case v := <-ch:
		t.Fatalf(format, v)
	default:
	}
}
