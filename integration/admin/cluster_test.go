package admin_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/golang-jwt/jwt/v5"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

// 10,000 peers over two nodes (5,000 on each: a hub built with the race
// detector may run at most 8,128 goroutines), of 100 users, every tenth
// subscribed to one of ten rooms: admin.peers on one node lists each of
// them once, in pages of at most 1,000, in order, and its filters by
// user, topic and node select exactly those they name. The time each page
// took is logged, not asserted: it says how fast this machine is.
func TestTenThousandPeers(t *testing.T) {
	const perNode, users = 5000, 100
	ns := startNATS(t)
	hubs := startCluster(t, ns, 2, "-max-conns", "0", "-max-conns-per-addr", "0", "-ping-interval=-1s")
	tokens := make([]string, users)
	for i := range tokens {
		tokens[i] = jwtFor(t, fmt.Sprintf("user-%d", i), nil)
	}
	var mu sync.Mutex
	var peers []*rawPeer
	t.Cleanup(func() {
		for _, p := range peers {
			p.close()
		}
	})
	// Four dialers per node: each peer i is user i%100 and, when i%10 is
	// 0, subscribes to room.(i/10%10).
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for n, h := range hubs {
		for w := range 4 {
			wg.Go(func() {
				for i := w; i < perNode; i += 4 {
					g := n*perNode + i
					p, err := dialRaw(h.Addr(), tokens[g%users])
					if err != nil {
						errs <- fmt.Errorf("peer %d: %w", g, err)
						return
					}
					mu.Lock()
					peers = append(peers, p)
					mu.Unlock()
					if g%10 == 0 {
						reply, err := p.roundTrip(fmt.Sprintf(`{"jsonrpc":"2.0","method":"rpc.subscribe","params":["room.%d"],"id":1}`, g/10%10))
						if err != nil || !strings.Contains(reply, `"result"`) {
							errs <- fmt.Errorf("peer %d subscribes: %s %v", g, reply, err)
							return
						}
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	all, took := listAll(t, hubs[0].AdminURL(), map[string]any{"limit": 1000})
	ids := make([]string, len(all))
	byNode := map[string]int{}
	for i, p := range all {
		ids[i] = p.ID
		byNode[p.Node]++
	}
	if len(all) != 2*perNode || !sortedUnique(ids) || byNode["n1"] != perNode || byNode["n2"] != perNode {
		t.Fatalf("listed %d peers (sorted and unique: %v), by node %v; want %d, %d on each", len(all), sortedUnique(ids), byNode, 2*perNode, perNode)
	}
	var total time.Duration
	for _, d := range took {
		total += d
	}
	t.Logf("admin.peers over 10,000 peers on 2 nodes: %d pages of 1,000 in %v (slowest page %v)", len(took), total, slices.Max(took))

	one, _ := listAll(t, hubs[0].AdminURL(), map[string]any{"user": "user-7"})
	if len(one) != 2*perNode/users {
		t.Errorf("user-7's peers: %d, want %d", len(one), 2*perNode/users)
	}
	for _, p := range one {
		if p.User != "user-7" || !strings.HasPrefix(p.Remote, "127.0.0.1:") {
			t.Errorf("user-7's peer: %+v", p)
		}
	}
	room, _ := listAll(t, hubs[1].AdminURL(), map[string]any{"topic": "room.3"})
	if len(room) != 2*perNode/100 {
		t.Errorf("room.3's peers: %d, want %d", len(room), 2*perNode/100)
	}
	for _, p := range room {
		if !slices.Equal(p.Topics, []string{"room.3"}) {
			t.Errorf("room.3's peer: %+v", p)
		}
	}
	start := time.Now()
	n2, pages := listAll(t, hubs[0].AdminURL(), map[string]any{"node": "n2", "limit": 1000})
	if len(n2) != perNode {
		t.Errorf("n2's peers: %d, want %d", len(n2), perNode)
	}
	t.Logf("admin.peers of n2's 5,000 peers, asked of n1: %d pages in %v", len(pages), time.Since(start))
	start = time.Now()
	local, pages := listAll(t, hubs[0].AdminURL(), map[string]any{"node": "n1", "limit": 1000})
	t.Logf("admin.peers of n1's own %d peers: %d pages in %v", len(local), len(pages), time.Since(start))

	var topics struct {
		Topics []struct {
			Topic       string
			Subscribers int
		}
	}
	mustCall(t, hubs[0].AdminURL(), opToken, "admin.topics", map[string]any{"pattern": "room.*"}, &topics)
	if len(topics.Topics) != 10 || topics.Topics[3].Topic != "room.3" || topics.Topics[3].Subscribers != 100 {
		t.Errorf("admin.topics room.*: %+v", topics.Topics)
	}
	in := waitNodes(t, hubs[1], 2)
	if in.Nodes[0].Node != "n2" || in.Nodes[0].Peers != perNode || in.Nodes[1].Peers != perNode {
		t.Errorf("admin.info on n2: %+v", in)
	}
}

// A kick of a user on one node of three closes the user's peers on every
// node with the code and reason given, and no one else's; with revoke,
// every node then refuses the user's tokens issued before the kick and
// accepts one issued after it.
func TestKickAcrossCluster(t *testing.T) {
	ns := startNATS(t)
	hubs := startCluster(t, ns, 3)
	old := jwtFor(t, "alice", jwt.MapClaims{"iat": time.Now().Add(-time.Hour).Unix()})
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Wait)
	defer cancel()
	var alice []*websocket.Conn
	for _, h := range hubs {
		c, _, err := websocket.Dial(ctx, h.WebSocketURL(), &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + old}}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		alice = append(alice, c)
	}
	bob, err := dialRaw(hubs[2].Addr(), jwtFor(t, "bob", nil))
	if err != nil {
		t.Fatal(err)
	}
	defer bob.close()

	var res struct {
		Disconnected []struct {
			ID   string
			User string
			Node string
		}
		RevokedBefore time.Time `json:"revoked_before"`
	}
	mustCall(t, hubs[0].AdminURL(), opToken, "admin.disconnect",
		map[string]any{"user": "alice", "code": 4003, "reason": "account closed", "revoke": true}, &res)
	var nodes []string
	for _, d := range res.Disconnected {
		nodes = append(nodes, d.Node)
	}
	slices.Sort(nodes)
	if !slices.Equal(nodes, []string{"n1", "n2", "n3"}) {
		t.Fatalf("disconnected: %+v", res.Disconnected)
	}
	for i, c := range alice {
		_, _, err := c.Read(ctx)
		var ce websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != 4003 || ce.Reason != "account closed" {
			t.Errorf("alice on n%d: %v, want close 4003 account closed", i+1, err)
		}
	}
	if reply, err := bob.roundTrip(`{"jsonrpc":"2.0","method":"rpc.ping","id":1}`); err != nil || !strings.Contains(reply, `"result"`) {
		t.Errorf("bob after the kick: %s %v", reply, err)
	}
	fresh := jwtFor(t, "alice", jwt.MapClaims{"iat": res.RevokedBefore.Unix()})
	for i, h := range hubs {
		var refused errHTTP
		if _, err := dialRaw(h.Addr(), old); !errors.As(err, &refused) || refused.status != http.StatusUnauthorized {
			t.Errorf("the old token on n%d: %v, want 401", i+1, err)
		}
		if err := call(t, h.URL(), old, "rpc.ping", map[string]any{}, nil); !errors.As(err, &refused) || refused.status != http.StatusUnauthorized {
			t.Errorf("the old token over POST on n%d: %v, want 401", i+1, err)
		}
		p, err := dialRaw(h.Addr(), fresh)
		if err != nil {
			t.Errorf("a token issued after the kick on n%d: %v", i+1, err)
			continue
		}
		p.close()
	}

	// The refusals of the old token, on every node, are listed from one.
	var last struct {
		Refusals []struct{ Node, Kind, Action, Target string }
	}
	mustCall(t, hubs[0].AdminURL(), opToken, "admin.refusals", map[string]any{"limit": 100}, &last)
	refusedOn := map[string]int{}
	for _, r := range last.Refusals {
		if r.Kind == "auth" && r.Target == "/rpc" {
			refusedOn[r.Node]++
		}
	}
	for _, n := range []string{"n1", "n2", "n3"} {
		if refusedOn[n] != 2 { // the handshake and the POST
			t.Errorf("admin.refusals lists %d refusals of the old token on %s, want 2: %+v", refusedOn[n], n, last.Refusals)
		}
	}
}

// admin.broadcast on one node reaches the subscribers of every node on
// each topic; admin.unsubscribe of a user on one node ends the user's
// subscriptions on another, which tells the peer with rpc.revoked, and
// the next broadcast no longer reaches it there.
func TestUnsubscribeAndBroadcast(t *testing.T) {
	ns := startNATS(t)
	hubs := startCluster(t, ns, 2)
	alice, err := dialRaw(hubs[1].Addr(), jwtFor(t, "alice", nil))
	if err != nil {
		t.Fatal(err)
	}
	defer alice.close()
	for _, topic := range []string{"chat.room1", "news"} {
		if reply, err := alice.roundTrip(`{"jsonrpc":"2.0","method":"rpc.subscribe","params":["` + topic + `"],"id":1}`); err != nil || !strings.Contains(reply, `"result"`) {
			t.Fatalf("subscribe %s: %s %v", topic, reply, err)
		}
	}
	var pub struct {
		Published []struct {
			Topic     string
			Delivered int
		}
	}
	mustCall(t, hubs[0].AdminURL(), opToken, "admin.broadcast", map[string]any{"topics": []string{"chat.room1", "news"}, "data": "hello"}, &pub)
	if len(pub.Published) != 2 {
		t.Fatalf("admin.broadcast: %+v", pub)
	}
	for _, want := range []string{"chat.room1", "news"} {
		msg := alice.next(t)
		if !strings.Contains(msg, `"method":"rpc.event"`) || !strings.Contains(msg, `"topic":"`+want+`"`) || !strings.Contains(msg, `"data":"hello"`) {
			t.Fatalf("alice got %s, want the event on %s", msg, want)
		}
	}

	var un struct {
		Unsubscribed []struct {
			Peer   string
			Node   string
			Topics []string
		}
	}
	mustCall(t, hubs[0].AdminURL(), opToken, "admin.unsubscribe", map[string]any{"user": "alice", "topic": "chat.>"}, &un)
	if len(un.Unsubscribed) != 1 || un.Unsubscribed[0].Node != "n2" || !slices.Equal(un.Unsubscribed[0].Topics, []string{"chat.room1"}) {
		t.Fatalf("admin.unsubscribe: %+v", un)
	}
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","method":"rpc.revoked","params":{"topics":["chat.room1"],"methods":[]}}`, alice.next(t))
	mustCall(t, hubs[0].AdminURL(), opToken, "admin.broadcast", map[string]any{"topics": []string{"chat.room1", "news"}, "data": 2}, nil)
	// Events of one node reach another in order: the one on news comes,
	// and none on chat.room1 before it.
	if msg := alice.next(t); !strings.Contains(msg, `"topic":"news"`) {
		t.Fatalf("alice got %s, want only the event on news", msg)
	}

	var provs struct{ Providers []json.RawMessage }
	mustCall(t, hubs[0].AdminURL(), opToken, "admin.providers", map[string]any{}, &provs)
	if len(provs.Providers) != 0 {
		t.Errorf("admin.providers: %s", provs.Providers)
	}
}
