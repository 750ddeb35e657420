package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
	"github.com/switchboard-rpc/switchboard/server"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

func TestWebSocketCall(t *testing.T) {
	ts := newTestServer(t, nil)
	c := ts.dialPeer(t, nil)
	var sum float64
	if err := c.Call(timeout(t), "add", []float64{1, 2}, &sum); err != nil || sum != 3 {
		t.Fatalf("add = %v, %v; want 3", sum, err)
	}
}

func TestWebSocketRules(t *testing.T) {
	ts := newTestServer(t, nil)
	ws := ts.dialRaw(t, nil)

	// Invalid JSON: -32700, and the socket stays open.
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"},"id":null}`,
		roundTrip(t, ws, `{"jsonrpc":"2.0","method":"foobar,"params":"bar","baz]`))
	// Binary frames are read like text frames.
	if err := ws.Write(timeout(t), websocket.MessageBinary, []byte(`{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}`)); err != nil {
		t.Fatal(err)
	}
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","result":19,"id":1}`, read(t, ws))
	// A notification gets nothing; the next call's reply is the next message.
	write(t, ws, `{"jsonrpc":"2.0","method":"update","params":[1,2,3,4,5]}`)
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","result":["hello",5],"id":"x"}`,
		roundTrip(t, ws, `{"jsonrpc":"2.0","method":"get_data","id":"x"}`))
	// Batches.
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request"},"id":null}`, roundTrip(t, ws, `[]`))
	testkit.JSONEqual(t, `[{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request"},"id":null},{"jsonrpc":"2.0","result":3,"id":2}]`,
		roundTrip(t, ws, `[1,{"jsonrpc":"2.0","method":"add","params":[1,2],"id":2}]`))
	// A slow call does not block a fast one on the same connection.
	write(t, ws, `{"jsonrpc":"2.0","method":"sleep","params":{"ms":10000},"id":"slow"}`)
	write(t, ws, `{"jsonrpc":"2.0","method":"add","params":[1,2],"id":"fast"}`)
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","result":3,"id":"fast"}`, readReply(t, ws))
	write(t, ws, `{"jsonrpc":"2.0","method":"rpc.cancel","params":{"id":"slow"}}`)
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","error":{"code":-32002,"message":"Request cancelled"},"id":"slow"}`, readReply(t, ws))
	ws.Close(websocket.StatusNormalClosure, "")
}

func TestWebSocketTooBig(t *testing.T) {
	for _, compression := range []bool{false, true} {
		name := "plain"
		mode := websocket.CompressionDisabled
		if compression {
			name, mode = "deflate", websocket.CompressionContextTakeover
		}
		t.Run(name, func(t *testing.T) {
			core, logs := observer.New(zap.InfoLevel)
			left := make(chan struct{})
			h := hub.New(&hub.Options{OnLeave: func(*hub.Peer) { close(left) }})
			ts := newTestServer(t, &server.Options{Conn: peer.Options{MaxMessage: 4096}, Compression: compression, Logger: zap.New(core), Hub: h})
			ws := ts.dialRaw(t, &websocket.DialOptions{CompressionMode: mode})
			// Under the limit, as it arrives (compressed, much smaller still).
			small := `{"jsonrpc":"2.0","method":"echo","params":["` + strings.Repeat("a", 4000) + `"],"id":1}`
			if got := roundTrip(t, ws, small); !strings.Contains(got, `"result"`) {
				t.Fatalf("small message: %.100s", got)
			}
			// Over it: 1009. Compressed, the frame is tiny: the limit is on
			// the decompressed size.
			write(t, ws, `{"jsonrpc":"2.0","method":"echo","params":["`+strings.Repeat("a", 5000)+`"],"id":2}`)
			_, _, err := ws.Read(timeout(t))
			if got := websocket.CloseStatus(err); got != websocket.StatusMessageTooBig {
				t.Fatalf("read after oversize message: %v (status %d), want 1009", err, got)
			}
			// The 1009 is sent before the server's reader has handled
			// its error: wait for that, or Shutdown may close the
			// connection first (peer's TestCloseErrorInChain covers that race).
			select {
			case <-left:
			case <-timeout(t).Done():
				t.Fatal("the server did not drop the peer")
			}
			if err := ts.srv.Shutdown(timeout(t)); err != nil {
				t.Fatal(err)
			}
			if left := logs.FilterMessage("peer disconnected").All(); len(left) != 1 || left[0].ContextMap()["code"] != int64(1009) {
				t.Fatalf("disconnect logged as %v, want code 1009", left)
			}
		})
	}
}

func TestTopicsOverWebSocket(t *testing.T) {
	ts := newTestServer(t, nil)
	e := strings.NewReplacer("EPOCH", ts.srv.Hub().Position().Epoch).Replace
	a := ts.dialRaw(t, nil)
	b := ts.dialRaw(t, nil)
	testkit.JSONEqual(t, e(`{"jsonrpc":"2.0","result":{"topics":["chat.*"],"epoch":"EPOCH","seq":0},"id":1}`),
		roundTrip(t, a, `{"jsonrpc":"2.0","method":"rpc.subscribe","params":{"topic":"chat.*"},"id":1}`))
	testkit.JSONEqual(t, e(`{"jsonrpc":"2.0","result":{"topics":["chat.>","news"],"epoch":"EPOCH","seq":0},"id":1}`),
		roundTrip(t, b, `{"jsonrpc":"2.0","method":"rpc.subscribe","params":["chat.>","news"],"id":1}`))

	// b publishes on chat.room1: a and b (the publisher is subscribed too).
	write(t, b, `{"jsonrpc":"2.0","method":"rpc.publish","params":{"topic":"chat.room1","data":{"text":"hi"}},"id":2}`)
	event := e(`{"jsonrpc":"2.0","method":"rpc.event","params":{"topic":"chat.room1","data":{"text":"hi"},"seq":1,"epoch":"EPOCH"}}`)
	testkit.JSONEqual(t, event, read(t, a))
	// b gets its event and its reply, in either order.
	got := []string{read(t, b), read(t, b)}
	testkit.JSONEqual(t, `[`+event+e(`,{"jsonrpc":"2.0","result":{"delivered":2,"seq":1,"epoch":"EPOCH"},"id":2}]`), "["+strings.Join(got, ",")+"]")

	// chat.room1.thread matches chat.> only.
	testkit.JSONEqual(t, e(`{"jsonrpc":"2.0","result":{"delivered":1,"seq":2,"epoch":"EPOCH"},"id":3}`),
		roundTrip(t, a, `{"jsonrpc":"2.0","method":"rpc.publish","params":["chat.room1.thread",[1,2]],"id":3}`))
	testkit.JSONEqual(t, e(`{"jsonrpc":"2.0","method":"rpc.event","params":{"topic":"chat.room1.thread","data":[1,2],"seq":2,"epoch":"EPOCH"}}`), read(t, b))

	// Bad topics: -32602.
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","error":{"code":-32602,"message":"Invalid params: invalid topic to publish on: \"chat.*\""},"id":4}`,
		roundTrip(t, a, `{"jsonrpc":"2.0","method":"rpc.publish","params":["chat.*",1],"id":4}`))
	if got := roundTrip(t, a, `{"jsonrpc":"2.0","method":"rpc.subscribe","params":["a..b"],"id":5}`); !strings.Contains(got, "-32602") {
		t.Fatalf("bad pattern: %s", got)
	}
	// Unsubscribe: those removed.
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","result":{"topics":["chat.*"]},"id":6}`,
		roundTrip(t, a, `{"jsonrpc":"2.0","method":"rpc.unsubscribe","params":{"topic":"chat.*"},"id":6}`))
	testkit.JSONEqual(t, e(`{"jsonrpc":"2.0","result":{"delivered":1,"seq":3,"epoch":"EPOCH"},"id":7}`),
		roundTrip(t, a, `{"jsonrpc":"2.0","method":"rpc.publish","params":["chat.x",null],"id":7}`))
}

func TestDefaultPolicyRefusesPublish(t *testing.T) {
	ts := newTestServer(t, &server.Options{Hub: hub.New(nil)})
	ws := ts.dialRaw(t, nil)
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","result":{"topics":["news"],"epoch":"`+ts.srv.Hub().Position().Epoch+`","seq":0},"id":1}`,
		roundTrip(t, ws, `{"jsonrpc":"2.0","method":"rpc.subscribe","params":["news"],"id":1}`))
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","error":{"code":-32001,"message":"Unauthorized: publish \"news\""},"id":2}`,
		roundTrip(t, ws, `{"jsonrpc":"2.0","method":"rpc.publish","params":["news",1],"id":2}`))
	// The server's Go code may publish.
	if n, err := ts.srv.Hub().Publish(timeout(t), "news", "server says"); err != nil || n != 1 {
		t.Fatalf("Publish = %d, %v", n, err)
	}
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","method":"rpc.event","params":{"topic":"news","data":"server says","seq":1,"epoch":"`+ts.srv.Hub().Position().Epoch+`"}}`, read(t, ws))
}

func TestServerToClientCalls(t *testing.T) {
	joined := make(chan *hub.Peer, 1)
	h := hub.New(&hub.Options{Policy: hub.AllowAll, OnJoin: func(p *hub.Peer) { joined <- p }})
	ts := newTestServer(t, &server.Options{Hub: h})

	mux := peer.NewMux()
	mux.Handle("whoami", peer.Func(func(context.Context, struct{}) (string, error) { return "the client", nil }))
	mux.Handle("fail", peer.Func(func(context.Context, json.RawMessage) (any, error) {
		return nil, peer.Errorf(4242, "no way").WithData(map[string]int{"why": 7})
	}))
	c := ts.dialPeer(t, &peer.Options{Router: mux})

	// The demo's callback: the hub calls the caller back.
	var who string
	if err := c.Call(timeout(t), "callback", map[string]any{"method": "whoami"}, &who); err != nil || who != "the client" {
		t.Fatalf("callback whoami = %q, %v", who, err)
	}
	// The client's error passes through unchanged.
	err := c.Call(timeout(t), "callback", map[string]any{"method": "fail", "params": []int{1}}, nil)
	var e *peer.Error
	if !errors.As(err, &e) || e.Code != 4242 || e.Message != "no way" || string(e.Data) != `{"why":7}` {
		t.Fatalf("callback fail = %v", err)
	}
	err = c.Call(timeout(t), "callback", map[string]any{"method": "nope"}, nil)
	if !errors.As(err, &e) || e.Code != peer.CodeMethodNotFound {
		t.Fatalf("callback nope = %v", err)
	}

	// Go code calls the peer through the hub.
	p := testkit.Recv(t, joined, "OnJoin")
	if got := h.Peer(p.ID()); got != p {
		t.Fatalf("Peer(%s) = %v", p.ID(), got)
	}
	who = ""
	if err := p.Conn().Call(timeout(t), "whoami", nil, &who); err != nil || who != "the client" {
		t.Fatalf("Peer.Call = %q, %v", who, err)
	}
}

// TestOriginRefused: -origins patterns, with and without a port. A
// pattern without a port matches an origin without one (the scheme's
// default port) only; "host:*" matches any port.
func TestOriginRefused(t *testing.T) {
	ts := newTestServer(t, &server.Options{AllowedOrigins: []string{"*.example.com", "https://app.example.org",
		"localhost:*", "*.example.net:8443"}})
	for _, tt := range []struct {
		origin string
		ok     bool
	}{
		{"", true}, // not a browser
		{"http://" + ts.Listener.Addr().String(), true}, // same origin
		{"https://evil.com", false},
		{"https://sub.example.com", true},
		{"https://example.com", false},
		{"https://app.example.org", true},
		{"http://app.example.org", false},
		{"https://sub.example.com:8443", false}, // a port the pattern does not name
		{"https://app.example.org:8443", false},
		{"http://localhost:3000", true}, // host:*
		{"http://localhost", false},     // host:* needs a port
		{"https://a.example.net:8443", true},
		{"https://a.example.net:8444", false},
		{"null", false},
	} {
		t.Run(tt.origin, func(t *testing.T) {
			h := http.Header{}
			if tt.origin != "" {
				h.Set("Origin", tt.origin)
			}
			ws, resp, err := websocket.Dial(timeout(t), ts.wsURL(), &websocket.DialOptions{HTTPHeader: h})
			if tt.ok {
				if err != nil {
					t.Fatalf("dial: %v", err)
				}
				ws.Close(websocket.StatusNormalClosure, "")
			} else if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
				if ws != nil {
					ws.CloseNow()
				}
				t.Fatalf("dial from %s: %v, want 403", tt.origin, err)
			}
			status, _ := post(t, ts.URL, "application/json", `{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}`, h)
			if want := map[bool]int{true: 200, false: 403}[tt.ok]; status != want {
				t.Fatalf("POST status %d, want %d", status, want)
			}
		})
	}
}

func TestHostRefusedOnLoopback(t *testing.T) {
	ts := newTestServer(t, nil)
	for _, tt := range []struct {
		host string
		ok   bool
	}{
		{"localhost", true},
		{"localhost:8080", true},
		{"app.localhost", true},
		{"127.0.0.1:1", true},
		{"[::1]:1", true},
		{"evil.com", false},
		{"evil.com:8080", false},
		{"localhost.evil.com", false},
	} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, ts.URL+"/", nil)
		req.Host = tt.host
		resp, _ := doRequest(t, req)
		if refused := resp.StatusCode == 403; refused == tt.ok {
			t.Errorf("Host %s: status %d (allowed: %v)", tt.host, resp.StatusCode, tt.ok)
		}
	}
	ts2 := newTestServer(t, &server.Options{AllowedHosts: []string{"hub.example.com"}})
	for host, ok := range map[string]bool{"hub.example.com": true, "localhost": false} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, ts2.URL+"/", nil)
		req.Host = host
		resp, _ := doRequest(t, req)
		if refused := resp.StatusCode == 403; refused == ok {
			t.Errorf("AllowedHosts, Host %s: status %d (allowed: %v)", host, resp.StatusCode, ok)
		}
	}
}

func TestAuthentication(t *testing.T) {
	auth := server.TokenAuth(map[string]string{"s3cret": "alice", "banned": "mallory"})
	mux := peer.NewMux()
	mux.Handle("whoami", peer.Func(func(ctx context.Context, _ struct{}) (any, error) {
		return hub.Identity(ctx), nil
	}))
	mux.Handle("admin", peer.Func(func(context.Context, struct{}) (string, error) { return "done", nil }))
	ts := newTestServer(t, &server.Options{
		Router: mux,
		Authenticate: func(r *http.Request) (any, error) {
			id, err := auth(r)
			if id == "mallory" {
				return nil, server.ErrForbidden
			}
			return id, err
		},
		Authorize: func(ctx context.Context, method string) error {
			if method == "admin" && hub.Identity(ctx) != "root" {
				return errors.New("admins only")
			}
			return nil
		},
	})
	call := `{"jsonrpc":"2.0","method":"whoami","id":1}`

	// WebSocket: refused before the upgrade.
	for token, want := range map[string]int{"": 401, "wrong": 401, "banned": 403} {
		h := http.Header{}
		if token != "" {
			h.Set("Authorization", "Bearer "+token)
		}
		ws, resp, err := websocket.Dial(timeout(t), ts.wsURL(), &websocket.DialOptions{HTTPHeader: h})
		if err == nil {
			ws.CloseNow()
		}
		if resp == nil || resp.StatusCode != want {
			t.Errorf("dial with token %q: %v, want %d", token, err, want)
		}
	}
	// POST: 401 with a -32001 error.
	status, body := post(t, ts.URL, "application/json", call, nil)
	if status != 401 {
		t.Fatalf("POST without token: %d", status)
	}
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","error":{"code":-32001,"message":"Unauthorized"},"id":null}`, body)
	status, body = post(t, ts.URL, "application/json", call, http.Header{"Authorization": {"Bearer s3cret"}})
	if status != 200 {
		t.Fatalf("POST with token: %d %s", status, body)
	}
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","result":"alice","id":1}`, body)

	// The token in the query, as a browser sends it; the handler sees
	// the identity, and Authorize refuses a method with -32001.
	ws, _, err := websocket.Dial(timeout(t), ts.wsURL()+"?token=s3cret", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","result":"alice","id":1}`, roundTrip(t, ws, call))
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","error":{"code":-32001,"message":"Unauthorized: admin"},"id":2}`,
		roundTrip(t, ws, `{"jsonrpc":"2.0","method":"admin","id":2}`))
	ws.Close(websocket.StatusNormalClosure, "")
}

func TestGracefulShutdown(t *testing.T) {
	ts := newTestServer(t, nil)
	ws := ts.dialRaw(t, nil)
	write(t, ws, `{"jsonrpc":"2.0","method":"sleep","params":{"ms":300},"id":1}`)
	// A round trip proves the sleep was dispatched first.
	write(t, ws, `{"jsonrpc":"2.0","method":"rpc.ping","id":2}`)
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","result":{},"id":2}`, readReply(t, ws))

	ctx, cancel := context.WithTimeout(t.Context(), testkit.Wait)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- ts.srv.Shutdown(ctx) }()

	// The call in flight finishes and its reply arrives, then the close
	// with 1001.
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","result":{"slept":300},"id":1}`, readReply(t, ws))
	_, _, err := ws.Read(ctx)
	if got := websocket.CloseStatus(err); got != websocket.StatusGoingAway {
		t.Fatalf("after the reply: %v, want close 1001", err)
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	// New connections and POSTs are refused, and health says so.
	if _, resp, err := websocket.Dial(timeout(t), ts.wsURL(), nil); err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("dial after shutdown: %v", err)
	}
	if status, _ := post(t, ts.URL, "application/json", `{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}`, nil); status != http.StatusServiceUnavailable {
		t.Fatalf("POST after shutdown: %d", status)
	}
	if status, _ := get(t, ts.URL+"/healthz"); status != http.StatusServiceUnavailable {
		t.Fatalf("healthz after shutdown: %d", status)
	}
}

func TestShutdownForcesAtDeadline(t *testing.T) {
	ts := newTestServer(t, nil)
	ws := ts.dialRaw(t, nil)
	write(t, ws, `{"jsonrpc":"2.0","method":"sleep","params":{"ms":60000},"id":1}`)
	write(t, ws, `{"jsonrpc":"2.0","method":"rpc.ping","id":2}`)
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","result":{},"id":2}`, readReply(t, ws))
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if err := ts.srv.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v, want DeadlineExceeded", err)
	}
	for {
		_, _, err := ws.Read(timeout(t))
		if err != nil {
			break // closed; the sleep was cancelled
		}
	}
}

func timeout(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Wait)
	t.Cleanup(cancel)
	return ctx
}

// The HTTP handler returns once the WebSocket is upgraded, so that an
// idle connection keeps neither the HTTP server's goroutine nor the
// request; the connection goes on serving, and its handlers still see
// the values a middleware put in the request's context.
func TestWebSocketOutlivesHTTPHandler(t *testing.T) {
	type key struct{}
	router := routerFunc(func(method string) (peer.Handler, peer.Mode) {
		return peer.HandlerFunc(func(ctx context.Context, _ *peer.Request) (any, error) {
			return ctx.Value(key{}), ctx.Err()
		}), peer.Concurrent
	})
	srv := server.New(&server.Options{Router: router})
	returned := make(chan struct{}, 1)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		srv.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), key{}, "from middleware")))
		returned <- struct{}{}
	}))
	defer ts.Close()
	defer func() {
		if err := srv.Shutdown(timeout(t)); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	}()

	ws, _, err := websocket.Dial(timeout(t), "ws"+strings.TrimPrefix(ts.URL, "http")+"/rpc", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	select {
	case <-returned:
	case <-timeout(t).Done():
		t.Fatal("the HTTP handler did not return after the upgrade")
	}
	testkit.JSONEqual(t, `{"jsonrpc":"2.0","result":"from middleware","id":1}`,
		roundTrip(t, ws, `{"jsonrpc":"2.0","method":"value","id":1}`))
}

// A page of an allowed origin may read the hub's answers over POST, a
// refusal's status included (its client probes so to learn why a
// handshake failed): the hub answers the CORS preflight and marks each
// answer. A page of another origin gets neither.
func TestCORSForAllowedOrigins(t *testing.T) {
	ts := newTestServer(t, &server.Options{
		AllowedOrigins: []string{"https://app.example.org"},
		Authenticate:   server.TokenAuth(map[string]string{"s3cret": "ada"}),
	})
	preflight := func(origin string) *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodOptions, ts.URL+"/rpc", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "authorization,content-type")
		resp, _ := doRequest(t, req)
		return resp
	}
	resp := preflight("https://app.example.org")
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example.org" ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Methods"), "POST") ||
		!strings.Contains(strings.ToLower(resp.Header.Get("Access-Control-Allow-Headers")), "authorization") {
		t.Errorf("preflight from an allowed origin: %d %v", resp.StatusCode, resp.Header)
	}
	if resp := preflight("https://evil.com"); resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight from another origin: %d %v", resp.StatusCode, resp.Header)
	}

	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL+"/rpc", strings.NewReader(`{"jsonrpc":"2.0","method":"rpc.ping","id":0}`))
	req.Header.Set("Origin", "https://app.example.org")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer guess")
	r, _ := doRequest(t, req)
	if r.StatusCode != http.StatusUnauthorized || r.Header.Get("Access-Control-Allow-Origin") != "https://app.example.org" {
		t.Errorf("a refused POST from an allowed origin: %d %v", r.StatusCode, r.Header)
	}
}
