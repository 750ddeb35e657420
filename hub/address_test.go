package hub_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/internal/hubtest"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
)

// whoami returns the id the hub gave c's peer.
func whoami(t testing.TB, c *peer.Conn) hub.PeerInfo {
	t.Helper()
	var me hub.PeerInfo
	if err := c.Call(context.Background(), "rpc.whoami", nil, &me); err != nil || me.ID == "" {
		t.Fatalf("rpc.whoami = %+v, %v", me, err)
	}
	return me
}

// rpcCall calls rpc.call on c with the address (and more) in params.
func rpcCall(ctx context.Context, c *peer.Conn, params map[string]any, result any) error {
	return c.Call(ctx, "rpc.call", params, result)
}

// A peer calls another by its id: the target's results and errors come
// back unchanged, over WebSocket and HTTP POST; ids of every kind are
// echoed; bad addresses get -32602, unknown ids -32007.
func TestAddressPeer(t *testing.T) {
	rh := startHub(t, nil)
	svc := newService(t, "tab")
	target := rh.dial(t, svc)
	me := whoami(t, target)
	if rh.h.Peer(me.ID) == nil {
		t.Fatalf("rpc.whoami gave %+v, not a peer of the hub", me)
	}
	caller := rh.dial(t, nil)

	var res map[string]any
	if err := rpcCall(ctx(t), caller, map[string]any{"peer": me.ID, "method": "billing.charge", "params": map[string]int{"amount": 3}}, &res); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(res) != "map[by:tab charged:3]" {
		t.Fatalf("result %v", res)
	}
	err := rpcCall(ctx(t), caller, map[string]any{"peer": me.ID, "method": "billing.fail"}, nil)
	wantError(t, err, 4001, "card declined")
	if e := err.(*peer.Error); string(e.Data) != `{"card":"4242"}` {
		t.Fatalf("data %s", e.Data)
	}
	// The target's own -32601 passes through; a peer no one has is -32007.
	wantError(t, rpcCall(ctx(t), caller, map[string]any{"peer": me.ID, "method": "nope"}, nil), peer.CodeMethodNotFound, "")
	wantError(t, rpcCall(ctx(t), caller, map[string]any{"peer": "no-such-peer", "method": "echo"}, nil), peer.CodeNoSuchPeer, "No such peer: no-such-peer")

	for _, bad := range []string{
		`["x"]`,
		`{"method":"echo"}`,
		`{"peer":"` + me.ID + `","user":"alice","method":"echo"}`,
		`{"peer":"` + me.ID + `"}`,
		`{"peer":"` + me.ID + `","method":"rpc.subscribe"}`,
		`{"peer":"` + me.ID + `","method":"echo","params":5}`,
		`{"peer":"` + me.ID + `","method":"echo","timeout":0}`,
		`{"peer":"","method":"echo"}`,
		`{"topic":"room.*","method":"echo"}`,
	} {
		got := rh.post(t, `{"jsonrpc":"2.0","method":"rpc.call","params":`+bad+`,"id":1}`)
		if !strings.Contains(got, `"code":-32602`) {
			t.Errorf("params %s: got %s, want -32602", bad, got)
		}
	}

	// Over POST: a backend with no WebSocket of its own; ids echoed as sent.
	for _, id := range []string{`123456789012345678901234567890`, `-0.5e-7`, `"a\u00e9\"b"`, `null`} {
		got := rh.post(t, `{"jsonrpc":"2.0","method":"rpc.call","params":{"peer":"`+me.ID+`","method":"billing.charge","params":[4]},"id":`+id+`}`)
		if want := `{"jsonrpc":"2.0","id":` + id + `,"result":{"by":"tab","charged":4}}`; got != want {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
	}
	// rpc.ping and rpc.discover may be called; the peer's own.
	if err := rpcCall(ctx(t), caller, map[string]any{"peer": me.ID, "method": "rpc.ping"}, nil); err != nil {
		t.Fatalf("rpc.ping: %v", err)
	}
	// whoami over POST: an id of each request's own.
	var first, second struct{ Result hub.PeerInfo }
	_ = json.Unmarshal([]byte(rh.post(t, `{"jsonrpc":"2.0","method":"rpc.whoami","id":1}`)), &first)
	_ = json.Unmarshal([]byte(rh.post(t, `{"jsonrpc":"2.0","method":"rpc.whoami","id":1}`)), &second)
	if first.Result.ID == "" || first.Result.ID == second.Result.ID || rh.h.Peer(first.Result.ID) != nil {
		t.Fatalf("whoami over POST: %+v, then %+v", first, second)
	}

	st := rh.h.Stats().Routes
	if st.InFlight != 0 || st.Addressed != 8 {
		t.Fatalf("stats %+v", st)
	}
}

// The timeout: -32003 for the caller, rpc.cancel for the target. A target
// that leaves mid-call: -32006.
func TestAddressTimeoutAndTargetLost(t *testing.T) {
	rh := startHub(t, nil)
	svc := newService(t, "tab")
	target := rh.dial(t, svc)
	me := whoami(t, target)
	caller := rh.dial(t, nil)

	err := rpcCall(ctx(t), caller, map[string]any{"peer": me.ID, "method": "billing.wait", "timeout": 50}, nil)
	wantError(t, err, peer.CodeTimeout, "Request timed out")
	testkit.Recv(t, svc.started, "svc.started") // billing.wait's, so that the next is billing.hold's
	if err := testkit.Recv(t, svc.ended, "svc.ended"); !errors.Is(err, context.Canceled) {
		t.Fatalf("the target's handler ended with %v", err)
	}

	errc := make(chan error, 1)
	go func() {
		errc <- rpcCall(context.Background(), caller, map[string]any{"peer": me.ID, "method": "billing.hold"}, nil)
	}()
	testkit.Recv(t, svc.started, "svc.started")
	target.Close()
	wantError(t, testkit.Recv(t, errc, "errc"), peer.CodeProviderLost, "Provider lost")
	testkit.WaitFor(t, "the target to leave", func() bool { return rh.h.Peer(me.ID) == nil })
	wantError(t, rpcCall(ctx(t), caller, map[string]any{"peer": me.ID, "method": "echo"}, nil), peer.CodeNoSuchPeer, "")
	if st := rh.h.Stats().Routes; st.InFlight != 0 || st.ProviderLost != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// A POST caller whose HTTP request is abandoned cancels the call at the
// target.
func TestAddressPostAbandoned(t *testing.T) {
	rh := startHub(t, nil)
	svc := newService(t, "tab")
	me := whoami(t, rh.dial(t, svc))
	pctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	body := `{"jsonrpc":"2.0","method":"rpc.call","params":{"peer":"` + me.ID + `","method":"billing.wait"},"id":1}`
	req, _ := http.NewRequestWithContext(pctx, http.MethodPost, rh.ts.URL+"/rpc", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	done := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	testkit.Recv(t, svc.started, "svc.started")
	cancel()
	if err := testkit.Recv(t, done, "done"); !errors.Is(err, context.Canceled) {
		t.Fatalf("the abandoned request: %v", err)
	}
	if err := testkit.Recv(t, svc.ended, "svc.ended"); !errors.Is(err, context.Canceled) {
		t.Fatalf("the target's handler ended with %v", err)
	}
	testkit.WaitFor(t, "no call in flight", func() bool { return rh.h.Stats().Routes.InFlight == 0 })
}

// rpc.call as a notification sends the method as one; nothing comes back.
func TestAddressNotification(t *testing.T) {
	rh := startHub(t, nil)
	svc := newService(t, "tab")
	me := whoami(t, rh.dial(t, svc))
	ws := rh.raw(t)
	hubtest.WriteText(t, ws, `{"jsonrpc":"2.0","method":"rpc.call","params":{"peer":"`+me.ID+`","method":"billing.note","params":["hi"]}}`)
	if got := testkit.Recv(t, svc.notes, "svc.notes"); got != `["hi"]` {
		t.Fatalf("the target got %s", got)
	}
	// The next answer on ws is the ping's: nothing came for the notification.
	hubtest.WriteText(t, ws, `{"jsonrpc":"2.0","method":"rpc.ping","id":2}`)
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","id":2,"result":{}}`, hubtest.ReadText(t, ws))
	if got := rh.post(t, `{"jsonrpc":"2.0","method":"rpc.call","params":{"peer":"`+me.ID+`","method":"billing.note","params":["by post"]}}`); got != "" {
		t.Fatalf("a notification over POST got %q", got)
	}
	if got := testkit.Recv(t, svc.notes, "svc.notes"); got != `["by post"]` {
		t.Fatalf("the target got %s", got)
	}
}

// The policy decides per caller and target; the default refuses.
func TestAddressPolicy(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	rh := startHub(t, &hub.Options{Policy: func(ctx context.Context, a hub.Action, target string) error {
		if a != hub.Address {
			return nil
		}
		mu.Lock()
		asked = append(asked, target)
		mu.Unlock()
		if target == "topic.secret" {
			return errors.New("no")
		}
		return nil
	}})
	me := whoami(t, rh.dial(t, newService(t, "tab")))
	caller := rh.dial(t, nil)
	if err := rpcCall(ctx(t), caller, map[string]any{"peer": me.ID, "method": "echo"}, nil); err != nil {
		t.Fatal(err)
	}
	wantError(t, rpcCall(ctx(t), caller, map[string]any{"topic": "secret", "method": "echo"}, nil), peer.CodeUnauthorized, "")
	mu.Lock()
	if fmt.Sprint(asked) != "[peer."+me.ID+" topic.secret]" {
		t.Fatalf("the policy was asked about %q", asked)
	}
	mu.Unlock()

	def := startHub(t, &hub.Options{Policy: hub.DefaultPolicy})
	got := def.post(t, `{"jsonrpc":"2.0","method":"rpc.call","params":{"user":"alice","method":"echo"},"id":1}`)
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"Unauthorized: address \"user.alice\""}}`, got)
}

// userHub starts a hub whose peers are who ?user= says.
func userHub(t *testing.T) *routeHub {
	return serveHub(t, hub.New(&hub.Options{Policy: hub.AllowAll}), func(r *http.Request) (any, error) {
		return r.URL.Query().Get("user"), nil
	})
}

// dialAs connects a peer of user serving router.
func (rh *routeHub) dialAs(t *testing.T, user string, router peer.Router) *peer.Conn {
	t.Helper()
	return hubtest.ServePeer(t, hubtest.DialWS(t, rh.wsURL()+"?user="+user, nil), &peer.Options{Router: router})
}

type peerResults struct {
	Results []struct {
		Peer   hub.PeerInfo
		Result json.RawMessage
		Error  *peer.Error
	}
}

// A user: every peer of that identity answers, the caller left out, one
// entry each.
func TestAddressUser(t *testing.T) {
	rh := userHub(t)
	named := func(name string) *peer.Mux {
		m := peer.NewMux()
		m.HandleFunc("draft", func(context.Context, *peer.Request) (any, error) { return name, nil })
		return m
	}
	tab1 := whoami(t, rh.dialAs(t, "alice", named("tab1")))
	tab2 := whoami(t, rh.dialAs(t, "alice", named("tab2")))
	rh.dialAs(t, "bob", named("bob"))
	caller := rh.dialAs(t, "alice", named("caller"))
	if me := whoami(t, caller); me.User != "alice" {
		t.Fatalf("whoami %+v", me)
	}
	var res peerResults
	if err := rpcCall(ctx(t), caller, map[string]any{"user": "alice", "method": "draft"}, &res); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range res.Results {
		got[r.Peer.ID+"/"+r.Peer.User] = string(r.Result)
	}
	want := map[string]string{tab1.ID + "/alice": `"tab1"`, tab2.ID + "/alice": `"tab2"`}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	// No one: an empty list.
	if err := rpcCall(ctx(t), caller, map[string]any{"user": "carol", "method": "draft"}, &res); err != nil || len(res.Results) != 0 {
		t.Fatalf("carol: %+v, %v", res, err)
	}
	got2 := rh.post(t, `{"jsonrpc":"2.0","method":"rpc.call","params":{"user":"nobody","method":"draft"},"id":1}`)
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","id":1,"result":{"results":[]}}`, got2)
}

// A topic with 1,000 subscribers, of which some answer errors and some
// never answer: one entry each, within the timeout; nothing is left in
// flight afterwards. Over MaxAddressed: -32004.
func TestAddressTopicThousand(t *testing.T) {
	const n = 1000
	rh := startHub(t, &hub.Options{MaxAddressed: n})
	mux := func(i int) *peer.Mux {
		m := peer.NewMux()
		m.HandleFunc("state", func(ctx context.Context, _ *peer.Request) (any, error) {
			switch i % 10 {
			case 0:
				return nil, &peer.Error{Code: peer.Code(4000 + i%7), Message: "busy"}
			case 1:
				<-ctx.Done() // never answers until cancelled
				return nil, ctx.Err()
			}
			return i, nil
		})
		return m
	}
	for i := range n {
		c := rh.dial(t, mux(i))
		if err := c.Call(ctx(t), "rpc.subscribe", []string{"room.7"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	ws := rh.raw(t)
	ws.SetReadLimit(1 << 20) // the answer is over coder/websocket's default 32 KiB
	caller := peer.NewConn(peer.WebSocket(ws), nil)
	go caller.Serve(context.Background()) //nolint:errcheck // the result is in caller.Err
	t.Cleanup(func() {
		caller.Close()
		<-caller.Done()
	})
	start := time.Now()
	var res peerResults
	// The timeout leaves room for 900 answers on a slow machine (with
	// the race detector, under load, 3 s was not always enough).
	if err := rpcCall(context.Background(), caller, map[string]any{"topic": "room.7", "method": "state", "timeout": 10000}, &res); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if len(res.Results) != n {
		t.Fatalf("%d entries, want %d", len(res.Results), n)
	}
	ids := map[string]bool{}
	counts := map[string]int{}
	for _, r := range res.Results {
		ids[r.Peer.ID] = true
		switch {
		case r.Error != nil && r.Error.Code == peer.CodeTimeout:
			counts["timeout"]++
		case r.Error != nil && r.Error.Message == "busy":
			counts["error"]++
		case r.Error == nil && len(r.Result) > 0:
			counts["result"]++
		default:
			t.Fatalf("entry %+v", r)
		}
	}
	if len(ids) != n || counts["timeout"] != n/10 || counts["error"] != n/10 || counts["result"] != n*8/10 {
		t.Fatalf("%d peers, %v", len(ids), counts)
	}
	if took < 10*time.Second || took > 30*time.Second {
		t.Fatalf("answered after %v, want the 10 s timeout", took)
	}
	testkit.WaitFor(t, "no call in flight", func() bool { return rh.h.Stats().Routes.InFlight == 0 })

	// The caller subscribes too: it is left out, and the others are n.
	if err := caller.Call(ctx(t), "rpc.subscribe", []string{"room.7"}, nil); err != nil {
		t.Fatal(err)
	}
	extra := rh.dial(t, mux(2))
	if err := extra.Call(ctx(t), "rpc.subscribe", []string{"room.7"}, nil); err != nil {
		t.Fatal(err)
	}
	wantError(t, rpcCall(ctx(t), caller, map[string]any{"topic": "room.7", "method": "state"}, nil), peer.CodeOverloaded, "")
}

// The timeout of an rpc.call is at most the hub's forward timeout; a
// notification to a topic reaches every peer of it.
func TestAddressTimeoutBoundAndTopicNotification(t *testing.T) {
	rh := startHub(t, &hub.Options{ForwardTimeout: 200 * time.Millisecond})
	svcs := []*service{newService(t, "a"), newService(t, "b")}
	var first hub.PeerInfo
	for i, s := range svcs {
		c := rh.dial(t, s)
		if err := c.Call(ctx(t), "rpc.subscribe", []string{"room.7"}, nil); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = whoami(t, c)
		}
	}
	caller := rh.dial(t, nil)
	start := time.Now()
	err := rpcCall(ctx(t), caller, map[string]any{"peer": first.ID, "method": "billing.wait", "timeout": 60000}, nil)
	wantError(t, err, peer.CodeTimeout, "")
	if took := time.Since(start); took > 4*time.Second {
		t.Fatalf("a 60 s timeout under a 200 ms forward timeout ended after %v", took)
	}
	testkit.Recv(t, svcs[0].ended, "svcs[0].ended")

	if err := caller.Notify(ctx(t), "rpc.call", map[string]any{"topic": "room.7", "method": "billing.note", "params": []string{"to all"}}); err != nil {
		t.Fatal(err)
	}
	for _, s := range svcs {
		if got := testkit.Recv(t, s.notes, "s.notes"); got != `["to all"]` {
			t.Fatalf("%s got %s", s.name, got)
		}
	}
}

// A call of a topic passes no progress on (whose would it be?); its
// timeout answers -32003 for each peer, which is sent rpc.cancel; and
// rpc.cancel from the caller reaches every peer.
func TestAddressTopicProgressAndCancel(t *testing.T) {
	rh := startHub(t, nil)
	svcs := []*service{newService(t, "a"), newService(t, "b")}
	for _, s := range svcs {
		if err := rh.dial(t, s).Call(ctx(t), "rpc.subscribe", []string{"room.7"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	ws := rh.raw(t)
	hubtest.WriteText(t, ws, `{"jsonrpc":"2.0","method":"rpc.call","params":{"topic":"room.7","method":"billing.wait","timeout":300},"id":"t"}`)
	var reply struct {
		ID     string
		Method string
		Result struct{ Results []struct{ Error *peer.Error } }
	}
	if err := json.Unmarshal([]byte(hubtest.ReadText(t, ws)), &reply); err != nil || reply.ID != "t" {
		t.Fatalf("the first message after the call is not its answer: %+v, %v", reply, err)
	}
	if len(reply.Result.Results) != 2 || reply.Result.Results[0].Error.Code != peer.CodeTimeout || reply.Result.Results[1].Error.Code != peer.CodeTimeout {
		t.Fatalf("answer %+v", reply.Result)
	}
	for _, s := range svcs {
		testkit.Recv(t, s.started, "s.started")
		if err := testkit.Recv(t, s.ended, "s.ended"); !errors.Is(err, context.Canceled) {
			t.Fatalf("%s's handler ended with %v", s.name, err)
		}
	}

	hubtest.WriteText(t, ws, `{"jsonrpc":"2.0","method":"rpc.call","params":{"topic":"room.7","method":"billing.wait"},"id":"u"}`)
	for _, s := range svcs {
		testkit.Recv(t, s.started, "s.started")
	}
	hubtest.WriteText(t, ws, `{"jsonrpc":"2.0","method":"rpc.cancel","params":{"id":"u"}}`)
	for _, s := range svcs {
		if err := testkit.Recv(t, s.ended, "s.ended"); !errors.Is(err, context.Canceled) {
			t.Fatalf("%s's handler ended with %v", s.name, err)
		}
	}
	if err := json.Unmarshal([]byte(hubtest.ReadText(t, ws)), &reply); err != nil || reply.ID != "u" || len(reply.Result.Results) != 2 {
		t.Fatalf("the cancelled call's answer: %+v, %v", reply, err)
	}
	for _, r := range reply.Result.Results {
		if r.Error == nil || r.Error.Code != peer.CodeCancelled {
			t.Fatalf("an entry of the cancelled call: %+v", r.Error)
		}
	}
	testkit.WaitFor(t, "no call in flight", func() bool { return rh.h.Stats().Routes.InFlight == 0 })
}
