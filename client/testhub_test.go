package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/switchboard-rpc/switchboard/peer"
)

// testHub is a hub on 127.0.0.1 that can be stopped and started again on
// the same port, under connected clients.
type testHub struct {
	t    *testing.T
	addr string

	mu    sync.Mutex
	srv   *http.Server
	conns map[*peer.Conn]map[string]bool
	wg    sync.WaitGroup
	mux   *peer.Mux
}

func startHub(t *testing.T) *testHub {
	t.Helper()
	h := &testHub{t: t, conns: make(map[*peer.Conn]map[string]bool), mux: demoMux()}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.addr = ln.Addr().String()
	h.serve(ln)
	t.Cleanup(h.stop)
	return h
}

func (h *testHub) url() string     { return "ws://" + h.addr + "/rpc" }
func (h *testHub) httpURL() string { return "http://" + h.addr + "/rpc" }

func (h *testHub) serve(ln net.Listener) {
	srv := &http.Server{Handler: http.HandlerFunc(h.handle)}
	h.mu.Lock()
	h.srv = srv
	h.mu.Unlock()
	h.wg.Go(func() { _ = srv.Serve(ln) })
}

// start listens again on the same address.
func (h *testHub) start() {
	h.t.Helper()
	var ln net.Listener
	var err error
	for range 50 { // the old socket may linger a moment
		if ln, err = net.Listen("tcp", h.addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		h.t.Fatal(err)
	}
	h.serve(ln)
}

// stop closes the listener and every connection with 1001.
func (h *testHub) stop() {
	h.mu.Lock()
	srv := h.srv
	h.srv = nil
	conns := h.conns
	h.conns = make(map[*peer.Conn]map[string]bool)
	h.mu.Unlock()
	if srv == nil {
		return
	}
	_ = srv.Close()
	for c := range conns {
		_ = c.CloseWith(peer.CloseGoingAway, "going away")
	}
	h.wg.Wait()
}

func (h *testHub) publish(topic string, data any) int {
	b, _ := json.Marshal(map[string]any{"topic": topic, "data": data})
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "rpc.event", "params": json.RawMessage(b)})
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for c, subs := range h.conns {
		for p := range subs {
			if match(p, topic) {
				_ = c.Post(msg)
				n++
				break
			}
		}
	}
	return n
}

func (h *testHub) handle(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		body, _ := io.ReadAll(r.Body)
		out := peer.Respond(r.Context(), body, &peer.Options{Router: h.router(nil)})
		if out == nil {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out)
		return
	}
	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	h.wg.Add(1)
	defer h.wg.Done()
	subs := make(map[string]bool)
	pc := peer.NewConn(peer.WebSocket(ws), &peer.Options{Router: h.router(subs)})
	h.mu.Lock()
	if h.srv == nil {
		h.mu.Unlock()
		_ = pc.CloseWith(peer.CloseGoingAway, "going away")
		return
	}
	h.conns[pc] = subs
	h.mu.Unlock()
	_ = pc.Serve(context.Background())
	h.mu.Lock()
	delete(h.conns, pc)
	h.mu.Unlock()
}

type hubRouter struct {
	h    *testHub
	subs map[string]bool // nil over POST
}

func (h *testHub) router(subs map[string]bool) peer.Router { return hubRouter{h, subs} }

func (r hubRouter) Lookup(method string) (peer.Handler, bool) {
	switch method {
	case "rpc.subscribe", "rpc.unsubscribe":
		return peer.HandlerFunc(func(ctx context.Context, req *peer.Request) (any, error) {
			if r.subs == nil {
				return nil, errors.New("no subscriptions over HTTP")
			}
			var p topicParams
			if err := json.Unmarshal(req.Params, &p); err != nil {
				return nil, peer.Errorf(peer.CodeInvalidParams, "%v", err)
			}
			r.h.mu.Lock()
			defer r.h.mu.Unlock()
			if method == "rpc.subscribe" {
				r.subs[p.Topic] = true
			} else {
				delete(r.subs, p.Topic)
			}
			return map[string]any{"topics": []string{p.Topic}}, nil
		}), false
	case "rpc.publish":
		return peer.HandlerFunc(func(ctx context.Context, req *peer.Request) (any, error) {
			var p struct {
				Topic string          `json:"topic"`
				Data  json.RawMessage `json:"data"`
			}
			if err := json.Unmarshal(req.Params, &p); err != nil {
				return nil, peer.Errorf(peer.CodeInvalidParams, "%v", err)
			}
			return map[string]int{"delivered": r.h.publish(p.Topic, p.Data)}, nil
		}), false
	}
	return r.h.mux.Lookup(method)
}

func demoMux() *peer.Mux {
	m := peer.NewMux()
	m.Handle("echo", peer.Func(func(_ context.Context, p json.RawMessage) (json.RawMessage, error) {
		return p, nil
	}))
	m.Handle("add", peer.Func(func(_ context.Context, p struct{ A, B float64 }) (float64, error) {
		return p.A + p.B, nil
	}))
	m.Handle("sleep", peer.Func(func(ctx context.Context, p struct {
		MS int `json:"ms"`
	}) (map[string]int, error) {
		select {
		case <-time.After(time.Duration(p.MS) * time.Millisecond):
			return map[string]int{"slept": p.MS}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}))
	m.Handle("callback", peer.Func(func(ctx context.Context, p struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}) (json.RawMessage, error) {
		c := peer.ConnFromContext(ctx)
		if c == nil {
			return nil, errors.New("callback needs a WebSocket")
		}
		var res json.RawMessage
		var params any
		if p.Params != nil {
			params = p.Params
		}
		err := c.Call(ctx, p.Method, params, &res)
		return res, err
	}))
	return m
}
