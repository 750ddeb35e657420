package server_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/peer"
)

func TestWebSocketCall(t *testing.T) {
	ts := newTestServer(t, nil)
	c := ts.dialPeer(t, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	var sum float64
	if err := c.Call(ctx, "add", []float64{1, 2}, &sum); err != nil || sum != 3 {
		t.Fatalf("add = %v, %v; want 3", sum, err)
	}
}

func TestSubscribePublish(t *testing.T) {
	ts := newTestServer(t, nil)
	events := make(chan json.RawMessage, 10)
	sub := ts.dialPeer(t, &peer.Options{Router: eventRouter(events)})
	pub := ts.dialPeer(t, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()

	var res struct{ Topics []string }
	if err := sub.Call(ctx, "rpc.subscribe", map[string]string{"topic": "chat.*"}, &res); err != nil {
		t.Fatal(err)
	}
	var pr struct{ Delivered int }
	if err := pub.Call(ctx, "rpc.publish", []any{"chat.room1", "hi"}, &pr); err != nil || pr.Delivered != 1 {
		t.Fatalf("publish = %+v, %v", pr, err)
	}
	select {
	case e := <-events:
		assertJSONEqual(t, `{"topic":"chat.room1","data":"hi"}`, string(e))
	case <-ctx.Done():
		t.Fatal("no event")
	}
}

// eventRouter serves rpc.event notifications by sending their params to ch.
func eventRouter(ch chan<- json.RawMessage) peer.Router {
	return routerFunc(func(method string) (peer.Handler, bool) {
		if method != "rpc.event" {
			return nil, false
		}
		return peer.HandlerFunc(func(_ context.Context, req *peer.Request) (any, error) {
			ch <- append(json.RawMessage(nil), req.Params...)
			return nil, nil
		}), true
	})
}

type routerFunc func(string) (peer.Handler, bool)

func (f routerFunc) Lookup(m string) (peer.Handler, bool) { return f(m) }
