package hub_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/internal/hubtest"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
	"github.com/switchboard-rpc/switchboard/server"
	"github.com/switchboard-rpc/switchboard/server/demo"
)

// These tests run a real server on 127.0.0.1, with the demo methods as
// the server's own, and peers over real WebSockets.

type routeHub struct {
	ts  *httptest.Server
	srv *server.Server
	h   *hub.Hub
}

// startHub starts a server whose hub is configured by opts (AllowAll when
// it has no Policy).
func startHub(t testing.TB, opts *hub.Options) *routeHub {
	t.Helper()
	if opts == nil {
		opts = &hub.Options{}
	}
	if opts.Policy == nil {
		opts.Policy = hub.AllowAll
	}
	return serveHub(t, hub.New(opts), nil)
}

// serveHub serves h and the demo methods, each connection authenticated
// by authenticate (nil: anonymous).
func serveHub(t testing.TB, h *hub.Hub, authenticate func(*http.Request) (any, error)) *routeHub {
	t.Helper()
	srv := server.New(&server.Options{Router: demo.Mux(), Hub: h, Authenticate: authenticate})
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testkit.Wait)
		defer cancel()
		_ = srv.Shutdown(ctx)
		ts.Close()
	})
	return &routeHub{ts: ts, srv: srv, h: h}
}

func (rh *routeHub) wsURL() string { return hubtest.WSURL(rh.ts.URL) }

// raw opens a WebSocket to the hub, closed at the end of the test.
func (rh *routeHub) raw(t testing.TB) *websocket.Conn {
	t.Helper()
	return hubtest.DialWS(t, rh.wsURL(), nil)
}

// dial connects a peer serving router (nil: none). It is closed at the end
// of the test, or by the test.
func (rh *routeHub) dial(t testing.TB, router peer.Router) *peer.Conn {
	t.Helper()
	c := hubtest.ServePeer(t, rh.raw(t), &peer.Options{Router: router})
	if s, ok := router.(*service); ok {
		t.Cleanup(s.free) // before c is closed: its handlers still holding would hold up Done
	}
	return c
}

// post sends body to /rpc and returns the reply body.
func (rh *routeHub) post(t *testing.T, body string) string {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx(t), http.MethodPost, rh.ts.URL+"/rpc", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return b.String()
}

// provided starts a hub on which a service called svc provides methods.
func provided(t *testing.T, methods ...string) (rh *routeHub, svc *service, prov *peer.Conn) {
	t.Helper()
	rh = startHub(t, nil)
	svc = newService(t, "svc")
	prov = rh.dial(t, svc)
	provide(t, prov, methods...)
	return rh, svc, prov
}

// provide makes c provide the methods.
func provide(t testing.TB, c *peer.Conn, methods ...string) {
	t.Helper()
	var res struct{ Methods []string }
	if err := c.Call(context.Background(), "rpc.provide", map[string]any{"methods": methods}, &res); err != nil {
		t.Fatalf("rpc.provide %q: %v", methods, err)
	}
}

// service is a provider's methods; its handlers report on the channels.
type service struct {
	*peer.Mux
	name    string
	calls   atomic.Int64
	notes   chan string   // billing.note: its params
	started chan string   // billing.hold and billing.wait have begun: the service's name
	ended   chan error    // billing.wait: why its context ended
	release chan struct{} // closed by free: billing.hold returns
	free    func()
}

func newService(t *testing.T, name string) *service {
	s := &service{
		Mux:     peer.NewMux(),
		name:    name,
		notes:   make(chan string, 10),
		started: make(chan string, 100),
		ended:   make(chan error, 10),
		release: make(chan struct{}),
	}
	var once sync.Once
	s.free = func() { once.Do(func() { close(s.release) }) }
	t.Cleanup(s.free)
	type charge struct {
		Amount int `json:"amount"`
	}
	s.Handle("billing.charge", peer.Func(func(_ context.Context, p charge) (map[string]any, error) {
		s.calls.Add(1)
		return map[string]any{"charged": p.Amount, "by": name}, nil
	}))
	s.HandleFunc("billing.fail", func(context.Context, *peer.Request) (any, error) {
		return nil, (&peer.Error{Code: 4001, Message: "card declined"}).WithData(map[string]string{"card": "4242"})
	})
	s.HandleFunc("billing.note", func(_ context.Context, req *peer.Request) (any, error) {
		s.notes <- string(req.Params)
		return nil, nil
	})
	s.HandleFunc("billing.hold", func(context.Context, *peer.Request) (any, error) {
		s.started <- name
		<-s.release
		return name, nil
	})
	s.HandleFunc("billing.wait", func(ctx context.Context, _ *peer.Request) (any, error) {
		for i := 1; i <= 2; i++ {
			if err := peer.Progress(ctx, map[string]int{"step": i}); err != nil {
				return nil, err
			}
		}
		s.started <- name
		<-ctx.Done()
		s.ended <- ctx.Err()
		return nil, &peer.Error{Code: peer.CodeCancelled, Message: "stopped by " + name}
	})
	s.HandleFunc("echo", func(context.Context, *peer.Request) (any, error) {
		return "the provider's echo", nil
	})
	s.HandleFunc("other.thing", func(context.Context, *peer.Request) (any, error) { return nil, nil })
	return s
}

func wantError(t *testing.T, err error, code peer.Code, msg string) {
	t.Helper()
	var e *peer.Error
	if !errors.As(err, &e) || e.Code != code || (msg != "" && e.Message != msg) {
		t.Fatalf("got %v, want %d %q", err, code, msg)
	}
}

// A service provides methods; callers over WebSocket and HTTP POST get
// its answers, results and errors unchanged.
func TestRouteCall(t *testing.T) {
	rh, svc, _ := provided(t, "billing.*")
	caller := rh.dial(t, nil)

	var res map[string]any
	if err := caller.Call(ctx(t), "billing.charge", map[string]int{"amount": 5}, &res); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(res) != "map[by:svc charged:5]" {
		t.Fatalf("billing.charge = %v", res)
	}
	err := caller.Call(ctx(t), "billing.fail", nil, nil)
	wantError(t, err, 4001, "card declined")
	if e := err.(*peer.Error); string(e.Data) != `{"card":"4242"}` {
		t.Fatalf("data %s", e.Data)
	}
	// Params the provider refuses: its -32602, with its data.
	err = caller.Call(ctx(t), "billing.charge", map[string]any{"amount": "five"}, nil)
	wantError(t, err, peer.CodeInvalidParams, "Invalid params")
	// The pattern matches, the provider has no such method: its -32601.
	wantError(t, caller.Call(ctx(t), "billing.nope", nil, nil), peer.CodeMethodNotFound, "")
	// No provider, no server method: the hub's -32601.
	wantError(t, caller.Call(ctx(t), "shipping.track", nil, nil), peer.CodeMethodNotFound, "Method not found")
	// The server's own methods come first.
	var echo json.RawMessage
	if err := caller.Call(ctx(t), "echo", []int{1}, &echo); err != nil || string(echo) != "[1]" {
		t.Fatalf("echo = %s, %v", echo, err)
	}

	got := rh.post(t, `{"jsonrpc":"2.0","method":"billing.charge","params":{"amount":7},"id":"post"}`)
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","id":"post","result":{"charged":7,"by":"svc"}}`, got)
	got = rh.post(t, `{"jsonrpc":"2.0","method":"billing.note","params":["by post"]}`)
	if got != "" || testkit.Recv(t, svc.notes, "svc.notes") != `["by post"]` {
		t.Fatalf("a notification over POST got %q", got)
	}

	st := rh.h.Stats().Routes
	if st.Providers != 1 || st.InFlight != 0 || st.Forwarded["billing.charge"] != 3 || st.Forwarded["billing.note"] != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// Ids of every kind come back byte for byte; a batch mixing the server's
// methods, provided ones and bad elements is answered element by element.
func TestRouteIDsAndBatches(t *testing.T) {
	rh, svc, _ := provided(t, "billing.charge", "billing.note", "billing.fail")
	ws := rh.raw(t)
	for _, id := range []string{`123456789012345678901234567890`, `-0.5e-7`, `"a\u00e9\"b"`, `null`} {
		hubtest.WriteText(t, ws, `{"jsonrpc":"2.0","method":"billing.charge","params":[1],"id":`+id+`}`)
		want := `{"jsonrpc":"2.0","id":` + id + `,"result":{"by":"svc","charged":1}}`
		if got := hubtest.ReadText(t, ws); got != want {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
	}
	hubtest.WriteText(t, ws, `[
		{"jsonrpc":"2.0","method":"echo","params":["server"],"id":1},
		{"jsonrpc":"2.0","method":"billing.charge","params":{"amount":2},"id":2},
		{"jsonrpc":"2.0","method":"billing.note","params":["in a batch"]},
		{"jsonrpc":"2.0","method":"billing.fail","id":3},
		{"jsonrpc":"2.0","method":"shipping.track","id":4},
		{"foo":"boo"}
	]`)
	testkit.JSONEqual(t, `[
		{"jsonrpc":"2.0","id":1,"result":["server"]},
		{"jsonrpc":"2.0","id":2,"result":{"by":"svc","charged":2}},
		{"jsonrpc":"2.0","id":3,"error":{"code":4001,"message":"card declined","data":{"card":"4242"}}},
		{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"Method not found"}},
		{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request"}}
	]`, hubtest.ReadText(t, ws))
	if got := testkit.Recv(t, svc.notes, "svc.notes"); got != `["in a batch"]` {
		t.Fatalf("notification params %s", got)
	}
}

// Two providers share the calls: each goes to the one with fewer calls
// in flight, and equally busy ones take turns.
func TestRouteTwoProviders(t *testing.T) {
	rh := startHub(t, nil)
	svcs := map[string]*service{"a": newService(t, "a"), "b": newService(t, "b")}
	provide(t, rh.dial(t, svcs["a"]), "billing.*")
	provide(t, rh.dial(t, svcs["b"]), "billing.*")
	caller := rh.dial(t, nil)
	charge := func(n int) {
		for range n {
			if err := caller.Call(ctx(t), "billing.charge", []int{1}, nil); err != nil {
				t.Fatal(err)
			}
		}
	}

	held := make(chan error, 1)
	go func() { held <- caller.Call(context.Background(), "billing.hold", nil, nil) }()
	var busy string
	select {
	case busy = <-svcs["a"].started:
	case busy = <-svcs["b"].started:
	case <-time.After(testkit.Wait):
		t.Fatal("the call reached no provider")
	}
	idle := map[string]string{"a": "b", "b": "a"}[busy]
	charge(10) // all to the idle one
	if nb, ni := svcs[busy].calls.Load(), svcs[idle].calls.Load(); nb != 0 || ni != 10 {
		t.Fatalf("with %s busy, it got %d calls and %s %d of 10", busy, nb, idle, ni)
	}
	svcs[busy].free()
	if err := testkit.Recv(t, held, "held"); err != nil {
		t.Fatal(err)
	}
	charge(20) // in turns
	if nb, ni := svcs[busy].calls.Load(), svcs[idle].calls.Load(); nb != 10 || ni != 20 {
		t.Fatalf("idle providers got %d and %d more of 20 calls", nb, ni-10)
	}
}

// rpc.progress from the callee reaches the caller under the caller's id,
// rpc.cancel from the caller reaches the callee, and the answer is the
// callee's: for a provided method and for a call addressed to a peer.
func TestCancelAndProgress(t *testing.T) {
	for _, tt := range []struct {
		name, svc, callee string
		// request makes c the callee and returns the call to it.
		request func(t *testing.T, c *peer.Conn) string
	}{
		{"provided", "svc", "provider", func(t *testing.T, c *peer.Conn) string {
			provide(t, c, "billing.wait")
			return `{"jsonrpc":"2.0","method":"billing.wait","id":"job-1"}`
		}},
		{"addressed", "tab", "target", func(t *testing.T, c *peer.Conn) string {
			return `{"jsonrpc":"2.0","method":"rpc.call","params":{"peer":"` + whoami(t, c).ID + `","method":"billing.wait"},"id":"job-1"}`
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rh := startHub(t, nil)
			svc := newService(t, tt.svc)
			req := tt.request(t, rh.dial(t, svc))
			ws := rh.raw(t)
			hubtest.WriteText(t, ws, req)
			for i := 1; i <= 2; i++ {
				want := fmt.Sprintf(`{"jsonrpc":"2.0","method":"rpc.progress","params":{"id":"job-1","data":{"step":%d}}}`, i)
				if got := hubtest.ReadText(t, ws); got != want {
					t.Fatalf("got  %s\nwant %s", got, want)
				}
			}
			testkit.Recv(t, svc.started, "svc.started")
			hubtest.WriteText(t, ws, `{"jsonrpc":"2.0","method":"rpc.cancel","params":{"id":"job-1"}}`)
			if err := testkit.Recv(t, svc.ended, "svc.ended"); !errors.Is(err, context.Canceled) {
				t.Fatalf("the %s's handler ended with %v", tt.callee, err)
			}
			testkit.JSONEqual(t, `{"jsonrpc":"2.0","id":"job-1","error":{"code":-32002,"message":"stopped by `+tt.svc+`"}}`, hubtest.ReadText(t, ws))
		})
	}
}

// A provider that goes away mid-call: its callers get -32006 at once, and
// its methods are withdrawn.
func TestRouteProviderLost(t *testing.T) {
	rh, svc, prov := provided(t, "billing.*")
	caller := rh.dial(t, nil)
	errc := make(chan error, 3)
	for range 3 {
		go func() { errc <- caller.Call(context.Background(), "billing.hold", nil, nil) }()
	}
	for range 3 {
		testkit.Recv(t, svc.started, "svc.started")
	}
	prov.Close()
	for range 3 {
		wantError(t, testkit.Recv(t, errc, "errc"), peer.CodeProviderLost, "Provider lost")
	}
	if st := rh.h.Stats().Routes; st.ProviderLost != 3 || st.InFlight != 0 {
		t.Fatalf("stats %+v", st)
	}
	testkit.WaitFor(t, "the provider to leave", func() bool { return rh.h.Stats().Routes.Providers == 0 })
	wantError(t, caller.Call(ctx(t), "billing.charge", []int{1}, nil), peer.CodeMethodNotFound, "Method not found")
}

// A caller that goes away mid-call cancels the call at the provider.
func TestRouteCallerLeaves(t *testing.T) {
	rh, svc, prov := provided(t, "billing.wait")
	ws := rh.raw(t)
	hubtest.WriteText(t, ws, `{"jsonrpc":"2.0","method":"billing.wait","id":1}`)
	testkit.Recv(t, svc.started, "svc.started")
	ws.Close(websocket.StatusNormalClosure, "")
	if err := testkit.Recv(t, svc.ended, "svc.ended"); !errors.Is(err, context.Canceled) {
		t.Fatalf("the provider's handler ended with %v", err)
	}
	if err := prov.Call(ctx(t), "rpc.ping", nil, nil); err != nil {
		t.Fatalf("the provider's connection: %v", err)
	}
	testkit.WaitFor(t, "no call in flight", func() bool { return rh.h.Stats().Routes.InFlight == 0 })
}

// A peer is never forwarded its own call.
func TestRouteOwnCall(t *testing.T) {
	rh := startHub(t, nil)
	a, b := newService(t, "a"), newService(t, "b")
	pa := rh.dial(t, a)
	provide(t, pa, "billing.charge")
	wantError(t, pa.Call(ctx(t), "billing.charge", []int{1}, nil), peer.CodeMethodNotFound, "Method not found")
	provide(t, rh.dial(t, b), "billing.charge")
	var res struct{ By string }
	if err := pa.Call(ctx(t), "billing.charge", []int{1}, &res); err != nil || res.By != "b" {
		t.Fatalf("got %+v, %v; want b's answer", res, err)
	}
}

func TestRouteProvide(t *testing.T) {
	rh := startHub(t, nil)
	c := rh.dial(t, nil)
	var res struct{ Methods []string }
	if err := c.Call(ctx(t), "rpc.provide", []string{"a.b", "a.*", "a.b", "x.>"}, &res); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(res.Methods) != "[a.b a.* x.>]" {
		t.Fatalf("provided %q", res.Methods)
	}
	if err := c.Call(ctx(t), "rpc.unprovide", map[string]any{"methods": []string{"a.*", "zz"}}, &res); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(res.Methods) != "[a.*]" {
		t.Fatalf("unprovided %q", res.Methods)
	}
	if got := rh.h.Peers()[0].Provided(); fmt.Sprint(got) != "[a.b x.>]" {
		t.Fatalf("the peer provides %q", got)
	}
	if err := c.Call(ctx(t), "rpc.unprovide", []string{"a.b", "x.>"}, nil); err != nil {
		t.Fatal(err)
	}
	if st := rh.h.Stats().Routes; st.Providers != 0 {
		t.Fatalf("%d providers after everything was withdrawn", st.Providers)
	}
	for _, tt := range []struct {
		params any
		msg    string
	}{
		{map[string]any{"methods": []string{"a..b"}}, `Invalid params: invalid method name or pattern: "a..b"`},
		{map[string]any{"methods": []string{"rpc.mine"}}, `Invalid params: the rpc.* names are reserved: "rpc.mine"`},
		{[]string{"rpc.>"}, `Invalid params: the rpc.* names are reserved: "rpc.>"`},
		{[]string{"a.>.b"}, `Invalid params: invalid method name or pattern: "a.>.b"`},
		{map[string]any{"methods": []string{}}, `Invalid params: no method: takes {"methods": [name or pattern, ...]}`},
		{map[string]any{"methods": "a"}, `Invalid params: takes {"methods": [name or pattern, ...]}`},
	} {
		wantError(t, c.Call(ctx(t), "rpc.provide", tt.params, nil), peer.CodeInvalidParams, tt.msg)
	}
	got := rh.post(t, `{"jsonrpc":"2.0","method":"rpc.provide","params":["a"],"id":1}`)
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"rpc.provide needs a WebSocket connection to forward calls to"}}`, got)

	// The default policy lets peers call provided methods, not provide.
	strict := startHub(t, &hub.Options{Policy: hub.DefaultPolicy})
	wantError(t, strict.dial(t, nil).Call(ctx(t), "rpc.provide", []string{"a"}, nil),
		peer.CodeUnauthorized, `Unauthorized: provide "a"`)
}

// A policy decides who may provide what and who may call it.
func TestRoutePolicy(t *testing.T) {
	rh := startHub(t, &hub.Options{Policy: func(ctx context.Context, a hub.Action, name string) error {
		if a == hub.Call && name == "billing.fail" {
			return errors.New("no")
		}
		return nil
	}})
	provide(t, rh.dial(t, newService(t, "svc")), "billing.*")
	caller := rh.dial(t, nil)
	wantError(t, caller.Call(ctx(t), "billing.fail", nil, nil), peer.CodeUnauthorized, `Unauthorized: call "billing.fail"`)
	if err := caller.Call(ctx(t), "billing.charge", []int{1}, nil); err != nil {
		t.Fatal(err)
	}
}

// rpc.discover on the hub lists the provided methods, as their providers
// describe them, after the server's own.
func TestRouteDiscover(t *testing.T) {
	rh, _, _ := provided(t, "billing.*", "echo")
	caller := rh.dial(t, nil)
	var doc testkit.Discovery
	if err := caller.Call(ctx(t), "rpc.discover", nil, &doc); err != nil {
		t.Fatal(err)
	}
	var names []string
	echos := 0
	for _, m := range doc.Methods {
		names = append(names, m.Name)
		if m.Name == "echo" {
			echos++
		}
		if m.Name == "billing.charge" && (len(m.Params) != 1 || m.Params[0].Name != "amount") {
			t.Errorf("billing.charge described as %+v", m)
		}
	}
	list := strings.Join(names, " ")
	for _, want := range []string{"subtract", "billing.charge", "billing.fail", "billing.wait"} {
		if !strings.Contains(list, want) {
			t.Errorf("%s missing from %s", want, list)
		}
	}
	if strings.Contains(list, "other.thing") || echos != 1 {
		t.Errorf("methods %s: other.thing is not provided, echo is the server's", list)
	}
}

// Past the hub's timeout for forwarded calls the caller gets -32003 and
// the provider rpc.cancel.
func TestRouteTimeout(t *testing.T) {
	rh := startHub(t, &hub.Options{ForwardTimeout: 50 * time.Millisecond})
	svc := newService(t, "svc")
	provide(t, rh.dial(t, svc), "billing.wait")
	wantError(t, rh.dial(t, nil).Call(ctx(t), "billing.wait", nil, nil), peer.CodeTimeout, "Request timed out")
	if err := testkit.Recv(t, svc.ended, "svc.ended"); !errors.Is(err, context.Canceled) {
		t.Fatalf("the provider's handler ended with %v", err)
	}
}

// Beyond Options.MaxForwards calls in flight to every provider, a call
// waits for one to end, as calls of the hub's own methods wait for a
// slot, rather than being refused; past ForwardTimeout, waiting included,
// -32003.
func TestRouteMaxForwards(t *testing.T) {
	rh := startHub(t, &hub.Options{MaxForwards: 1, ForwardTimeout: 10 * time.Second})
	svc := newService(t, "svc")
	provide(t, rh.dial(t, svc), "billing.*")
	caller := rh.dial(t, nil)
	errc := make(chan error, 1)
	go func() { errc <- caller.Call(context.Background(), "billing.hold", nil, nil) }()
	testkit.Recv(t, svc.started, "svc.started")
	charged := make(chan error, 1)
	go func() { charged <- caller.Call(context.Background(), "billing.charge", []int{1}, nil) }()
	testkit.WaitFor(t, "the second call to wait", func() bool { return rh.h.Stats().Routes.InFlight == 1 && svc.calls.Load() == 0 })
	svc.free()
	if err := testkit.Recv(t, errc, "errc"); err != nil {
		t.Fatal(err)
	}
	if err := testkit.Recv(t, charged, "charged"); err != nil || svc.calls.Load() != 1 {
		t.Fatalf("the call that waited: %v, %d calls", err, svc.calls.Load())
	}

	// A call that waits for a slot gets ForwardTimeout in all, its wait
	// counted: -32003 about one timeout after it was made, not two.
	const timeout = 2 * time.Second
	short := startHub(t, &hub.Options{MaxForwards: 1, ForwardTimeout: timeout})
	svc2 := newService(t, "svc2")
	provide(t, short.dial(t, svc2), "billing.*")
	c2 := short.dial(t, nil)
	held := make(chan error, 1)
	go func() { held <- c2.Call(context.Background(), "billing.hold", nil, nil) }()
	testkit.Recv(t, svc2.started, "svc2.started")
	start := time.Now()
	wantError(t, c2.Call(ctx(t), "billing.hold", nil, nil), peer.CodeTimeout, "Request timed out")
	if d := time.Since(start); d > timeout*7/4 {
		t.Errorf("the call that waited was answered after %v: its wait did not count against the timeout of %v", d, timeout)
	}
	svc2.free()
	<-held
}

// A forwarded call in flight when the server shuts down gets its
// provider's answer before the connections close.
func TestRouteShutdown(t *testing.T) {
	rh, svc, _ := provided(t, "billing.hold")
	caller := rh.dial(t, nil)
	errc := make(chan error, 1)
	var who string
	go func() { errc <- caller.Call(context.Background(), "billing.hold", nil, &who) }()
	testkit.Recv(t, svc.started, "svc.started")
	done := rh.startShutdown(t)
	svc.free()
	if err := testkit.Recv(t, errc, "errc"); err != nil || who != "svc" {
		t.Fatalf("got %q, %v; want the provider's answer", who, err)
	}
	if err := testkit.Recv(t, done, "done"); err != nil {
		t.Fatal(err)
	}
}

// Once their answers are back, 10,000 forwarded calls leave nothing
// behind: no call counted in flight, no goroutine.
func TestRouteLeavesNothing(t *testing.T) {
	rh, _, _ := provided(t, "billing.*")
	caller := rh.dial(t, nil)
	if err := caller.Call(ctx(t), "billing.charge", []int{0}, nil); err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()

	const calls, workers = 10000, 8
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < calls; i += workers {
				var res struct{ Charged int }
				if err := caller.Call(t.Context(), "billing.charge", []int{i}, &res); err != nil || res.Charged != i {
					t.Errorf("call %d: %+v, %v", i, res, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if st := rh.h.Stats().Routes; st.Forwarded["billing.charge"] != calls+1 {
		t.Errorf("stats %+v", st)
	}
	// A connection's idle workers end after a second or two. A reader
	// whose handler ran long (under -race, now and then) hands its role to
	// a goroutine that keeps it for the connection's life, while Serve
	// waits: one more goroutine for each of the four connections (the
	// caller's and the provider's, at both ends), at most; a goroutine
	// left per call would be thousands.
	const movedReaders = 4
	testkit.WaitFor(t, "the goroutines to end", func() bool { return runtime.NumGoroutine() <= before+movedReaders })
	testkit.WaitFor(t, "no call in flight", func() bool { return rh.h.Stats().Routes.InFlight == 0 })
}

// startShutdown starts the hub's Shutdown and returns once the hub says it
// is shutting down (/healthz answers 503); Shutdown's result comes on the
// channel returned.
func (rh *routeHub) startShutdown(t *testing.T) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- rh.srv.Shutdown(context.Background()) }()
	testkit.WaitFor(t, "the hub to be shutting down", func() bool {
		resp, err := http.Get(rh.ts.URL + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusServiceUnavailable
	})
	return done
}
