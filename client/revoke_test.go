package client

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/hub/rules"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
	"github.com/switchboard-rpc/switchboard/server"
	"github.com/switchboard-rpc/switchboard/server/demo"
)

// grantsHub starts a hub that takes JWTs signed with testSecret and
// judges them by their grants.
func grantsHub(t *testing.T) (*hub.Hub, string) {
	t.Helper()
	j, err := server.NewJWT(t.Context(), &server.JWTOptions{Key: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	set, err := rules.Compile(nil)
	if err != nil {
		t.Fatal(err)
	}
	h := hub.New(&hub.Options{Policy: set.Policy})
	srv := server.New(&server.Options{Hub: h, Router: demo.Mux(), Authenticate: j.Authenticate, Reauthenticate: j.Verify})
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		_ = srv.Shutdown(sctx)
		ts.Close()
	})
	return h, "ws" + strings.TrimPrefix(ts.URL, "http") + "/rpc"
}

func granted(t *testing.T, sub string, grants map[string]any) string {
	return testkit.HS256(t, testSecret, sub, time.Hour, map[string]any{"switchboard": grants})
}

// TestRevoked: a token with narrower grants makes the hub end a
// subscription and a provided method; the client ends the subscription
// with ErrRevoked, drops the provision, calls OnRevoked, and does not
// subscribe or provide them again after a reconnection.
func TestRevoked(t *testing.T) {
	h, url := grantsHub(t)
	wide := map[string]any{"subscribe": []string{"news.*", "user.alice.>"}, "provide": []string{"billing.*", "report.*"}, "publish": []string{">"}}
	narrow := map[string]any{"subscribe": []string{"user.alice.>"}, "provide": []string{"report.*"}, "publish": []string{">"}}
	token := granted(t, "alice", wide)
	revoked := make(chan Revoked, 1)
	c := dial(t, url, &Options{
		TokenFunc: func(context.Context) (string, error) { return token, nil },
		OnRevoked: func(r Revoked) { revoked <- r },
	})
	news, err := c.Subscribe(ctx(t), "news.*", func(Event) {})
	if err != nil {
		t.Fatal(err)
	}
	inbox := make(chan Event, 10)
	mine, err := c.Subscribe(ctx(t), "user.alice.>", func(ev Event) { inbox <- ev })
	if err != nil {
		t.Fatal(err)
	}
	serve := peer.HandlerFunc(func(context.Context, *peer.Request) (any, error) { return "ok", nil })
	if _, err := c.Provide(ctx(t), "billing.*", serve); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Provide(ctx(t), "report.*", serve); err != nil {
		t.Fatal(err)
	}

	token = granted(t, "alice", narrow) // also for the reconnection below
	if err := c.Call(ctx(t), "rpc.auth", map[string]string{"token": token}, nil); err != nil {
		t.Fatal(err)
	}
	r := testkit.Recv(t, revoked, "OnRevoked")
	if fmt.Sprint(r.Topics, r.Methods) != "[news.*] [billing.*]" {
		t.Fatalf("OnRevoked(%+v)", r)
	}
	testkit.Recv(t, news.Done(), "the revoked subscription's end")
	if err := news.Err(); !errors.Is(err, ErrRevoked) || !strings.Contains(err.Error(), "news.*") {
		t.Errorf("revoked subscription's Err = %v, want ErrRevoked", err)
	}
	if err := mine.Err(); err != nil {
		t.Errorf("the allowed subscription's Err = %v", err)
	}
	if m := fmt.Sprint(c.prov.methods()); m != "[report.*]" {
		t.Errorf("provided after: %s", m)
	}
	if err := news.Unsubscribe(ctx(t)); err != nil {
		t.Errorf("Unsubscribe of a revoked subscription: %v", err)
	}

	// After a reconnection, only what is still allowed comes back.
	p := h.Peers()[0]
	_ = p.Conn().Close()
	testkit.WaitFor(t, "a new peer with its subscription", func() bool {
		ps := h.Peers()
		return len(ps) == 1 && ps[0] != p && fmt.Sprint(ps[0].Topics()) == "[user.alice.>]" && fmt.Sprint(ps[0].Provided()) == "[report.*]"
	})
	if _, err := c.Publish(ctx(t), "user.alice.inbox", 1); err != nil {
		t.Fatal(err)
	}
	if ev := testkit.Recv(t, inbox, "event"); ev.Topic != "user.alice.inbox" {
		t.Errorf("event %+v", ev)
	}
}

// TestSubscriptionErrClosed: a client's Close ends its subscriptions with
// ErrClosed; Unsubscribe with no error.
func TestSubscriptionErrClosed(t *testing.T) {
	_, url := grantsHub(t)
	token := granted(t, "bob", map[string]any{"subscribe": []string{">"}})
	c := dial(t, url, &Options{TokenFunc: func(context.Context) (string, error) { return token, nil }})
	a, err := c.Subscribe(ctx(t), "a", func(Event) {})
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Subscribe(ctx(t), "b", func(Event) {})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Unsubscribe(ctx(t)); err != nil {
		t.Fatal(err)
	}
	testkit.Recv(t, a.Done(), "a's end")
	if err := a.Err(); err != nil {
		t.Errorf("Err after Unsubscribe = %v", err)
	}
	c.Close()
	testkit.Recv(t, b.Done(), "b's end")
	if err := b.Err(); !errors.Is(err, ErrClosed) {
		t.Errorf("Err after Close = %v, want ErrClosed", err)
	}
}

func ExampleUserWord() {
	fmt.Println("user." + UserWord("john.doe@example.com") + ".inbox")
	// Output: user.john:2edoe:40example:2ecom.inbox
}
