package hub_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
)

// revokeRouter is a peer's router that serves the methods it provides and
// records the hub's rpc.revoked and rpc.event notifications.
type revokeRouter struct {
	revoked chan hub.Revoked
	events  chan string // topics
}

func (r *revokeRouter) Lookup(method string) (peer.Handler, peer.Mode) {
	switch method {
	case "rpc.revoked":
		return peer.HandlerFunc(func(_ context.Context, req *peer.Request) (any, error) {
			var rv hub.Revoked
			if err := json.Unmarshal(req.Params, &rv); err != nil {
				return nil, err
			}
			r.revoked <- rv
			return nil, nil
		}), peer.Inline
	case "rpc.event":
		return peer.HandlerFunc(func(_ context.Context, req *peer.Request) (any, error) {
			var ev struct{ Topic string }
			_ = json.Unmarshal(req.Params, &ev)
			r.events <- ev.Topic
			return nil, nil
		}), peer.Inline
	}
	return peer.HandlerFunc(func(_ context.Context, req *peer.Request) (any, error) {
		return "served " + req.Method, nil
	}), peer.Concurrent
}

// A narrowed policy ends what the peer holds and no longer may: its
// subscriptions and provided methods, at once, and tells it which. What
// the server's Go code subscribed it to stays.
func TestReauthorize(t *testing.T) {
	var narrow atomic.Bool
	rh := startHub(t, &hub.Options{Policy: func(_ context.Context, a hub.Action, target string) error {
		if narrow.Load() && a != hub.Publish && a != hub.Call && (strings.HasPrefix(target, "news.") || target == "billing.*" || a == hub.Presence && target == "room.1") {
			return errors.New("no")
		}
		return nil
	}})
	r := &revokeRouter{revoked: make(chan hub.Revoked, 1), events: make(chan string, 10)}
	c := rh.dial(t, r)
	for _, sub := range []string{`["news.*"]`, `["user.alice.>"]`, `{"topic": "room.1", "presence": true}`, `["room.2"]`} {
		if err := c.Call(ctx(t), "rpc.subscribe", json.RawMessage(sub), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Call(ctx(t), "rpc.provide", map[string]any{"methods": []string{"billing.*", "report.x"}}, nil); err != nil {
		t.Fatal(err)
	}
	p := rh.h.Peers()[0]
	if err := p.Subscribe("news.server"); err != nil {
		t.Fatal(err)
	}

	narrow.Store(true)
	got, err := p.Reauthorize(hub.WithIdentity(ctx(t), p.Identity()))
	if err != nil {
		t.Fatal(err)
	}
	want := hub.Revoked{Topics: []string{"news.*", "room.1"}, Methods: []string{"billing.*"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Reauthorize = %v, want %v", got, want)
	}
	if told := testkit.Recv(t, r.revoked, "rpc.revoked"); fmt.Sprint(told) != fmt.Sprint(want) {
		t.Fatalf("rpc.revoked %v, want %v", told, want)
	}
	if topics := fmt.Sprint(p.Topics()); topics != "[news.server room.2 user.alice.>]" {
		t.Errorf("topics after: %s", topics)
	}
	if m := fmt.Sprint(p.Provided()); m != "[report.x]" {
		t.Errorf("provided after: %s", m)
	}

	// Nothing more is delivered or forwarded under what ended.
	other := rh.dial(t, nil)
	for topic, n := range map[string]int{"news.today": 0, "room.1": 0, "user.alice.inbox": 1} {
		var res struct{ Delivered int }
		if err := other.Call(ctx(t), "rpc.publish", []any{topic, 1}, &res); err != nil || res.Delivered != n {
			t.Errorf("publish on %s: %+v, %v; want %d delivered", topic, res, err, n)
		}
	}
	if topic := testkit.Recv(t, r.events, "event"); topic != "user.alice.inbox" {
		t.Errorf("event on %s", topic)
	}
	wantError(t, other.Call(ctx(t), "billing.charge", nil, nil), peer.CodeMethodNotFound, "")
	var res string
	if err := other.Call(ctx(t), "report.x", nil, &res); err != nil || res != "served report.x" {
		t.Errorf("report.x: %q, %v", res, err)
	}

	// Asked again, nothing more ends, and the peer is not told.
	if got, err := p.Reauthorize(hub.WithIdentity(ctx(t), p.Identity())); err != nil || !got.Empty() {
		t.Errorf("Reauthorize again = %v, %v", got, err)
	}
	nonePending(t, c, r.revoked, "told again: %v")
}

// An rpc.subscribe whose Policy check came before a reauthorization, and
// whose subscription after it, asks the Policy again: nothing allowed
// only by what was replaced slips in.
func TestReauthorizeDuringSubscribe(t *testing.T) {
	var narrow atomic.Bool
	asked := make(chan struct{})
	release := make(chan struct{})
	var first atomic.Bool
	rh := startHub(t, &hub.Options{Policy: func(_ context.Context, a hub.Action, target string) error {
		refuse := narrow.Load() // decided before waiting, as a Policy reading a token would
		if a == hub.Subscribe && first.CompareAndSwap(false, true) {
			close(asked)
			<-release
		}
		if refuse && strings.HasPrefix(target, "news.") {
			return errors.New("no")
		}
		return nil
	}})
	c := rh.dial(t, nil)
	errc := make(chan error, 1)
	go func() { errc <- c.Call(context.Background(), "rpc.subscribe", []string{"news.x"}, nil) }()
	testkit.Recv(t, asked, "the policy asked")
	narrow.Store(true)
	p := rh.h.Peers()[0]
	if got, err := p.Reauthorize(hub.WithIdentity(ctx(t), p.Identity())); err != nil || !got.Empty() {
		t.Fatalf("Reauthorize = %v, %v; want nothing held yet", got, err)
	}
	close(release)
	wantError(t, testkit.Recv(t, errc, "rpc.subscribe answered"), peer.CodeUnauthorized, "")
	if topics := p.Topics(); len(topics) != 0 {
		t.Errorf("subscribed to %v under what was replaced", topics)
	}
}
