package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/coder/websocket"
	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/peer"
	"github.com/switchboard-rpc/switchboard/server"
)

// A server with one method, called over HTTP POST.
func ExampleNew() {
	mux := peer.NewMux()
	mux.Handle("add", peer.Func(func(_ context.Context, p struct{ A, B float64 }) (float64, error) {
		return p.A + p.B, nil
	}))
	srv := server.New(&server.Options{Router: mux})
	ts := httptest.NewServer(srv)
	defer ts.Close()
	defer srv.Shutdown(context.Background()) //nolint:errcheck

	resp, err := http.Post(ts.URL+"/rpc", "application/json",
		strings.NewReader(`{"jsonrpc":"2.0","method":"add","params":{"a":1,"b":2},"id":1}`))
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(body))
	// Output: 200 {"jsonrpc":"2.0","id":1,"result":3}
}

// A WebSocket peer calls a method, subscribes to a topic and receives an
// event published by the server's Go code.
func Example_webSocket() {
	h := hub.New(nil) // peers may subscribe; only Go code publishes
	mux := peer.NewMux()
	mux.Handle("greet", peer.Func(func(_ context.Context, p struct{ Name string }) (string, error) {
		return "hello, " + p.Name, nil
	}))
	srv := server.New(&server.Options{Router: mux, Hub: h})
	ts := httptest.NewServer(srv)
	defer ts.Close()
	defer srv.Shutdown(context.Background()) //nolint:errcheck

	ctx := context.Background()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(ts.URL, "http")+"/rpc", nil)
	if err != nil {
		log.Fatal(err)
	}
	events := make(chan json.RawMessage, 1)
	conn := peer.NewConn(peer.WebSocket(ws), &peer.Options{Router: eventRouter(events)})
	go conn.Serve(ctx) //nolint:errcheck
	defer func() { conn.Close(); <-conn.Done() }()

	var greeting string
	if err := conn.Call(ctx, "greet", []string{"Ada"}, &greeting); err != nil {
		log.Fatal(err)
	}
	fmt.Println(greeting)
	if err := conn.Call(ctx, "rpc.subscribe", map[string]string{"topic": "news.>"}, nil); err != nil {
		log.Fatal(err)
	}
	n, _ := h.Publish(ctx, "news.tech", "Switchboard ships")
	fmt.Println("delivered to", n)
	var ev struct {
		Topic string
		Data  string
		Seq   uint64 // the event's position in the hub's stream
	}
	if err := json.Unmarshal(<-events, &ev); err != nil {
		log.Fatal(err)
	}
	fmt.Println(ev.Topic, ev.Data, ev.Seq)
	// Output:
	// hello, Ada
	// delivered to 1
	// news.tech Switchboard ships 1
}

// Bearer-token authentication: a token in the Authorization header or,
// from a browser, in the token query parameter.
func ExampleTokenAuth() {
	mux := peer.NewMux()
	mux.Handle("whoami", peer.Func(func(ctx context.Context, _ struct{}) (any, error) {
		return hub.Identity(ctx), nil
	}))
	srv := server.New(&server.Options{
		Router:       mux,
		Authenticate: server.TokenAuth(map[string]string{"s3cret": "alice"}),
	})
	ts := httptest.NewServer(srv)
	defer ts.Close()

	for _, token := range []string{"", "s3cret"} {
		req, _ := http.NewRequest("POST", ts.URL+"/rpc", strings.NewReader(`{"jsonrpc":"2.0","method":"whoami","id":1}`))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println(resp.StatusCode, string(body))
	}
	// Output:
	// 401 {"jsonrpc":"2.0","error":{"code":-32001,"message":"Unauthorized"},"id":null}
	// 200 {"jsonrpc":"2.0","id":1,"result":"alice"}
}
