package mcp_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/hub/rules"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
	"github.com/switchboard-rpc/switchboard/server"
)

// expiringAuth authenticates "short", a token of carol that expires a
// second after each request that brings it, "carol", which may subscribe
// to news.>, and "carol-narrow", which may subscribe to news.weather only.
func expiringAuth(r *http.Request) (any, error) {
	all := &[]string{">"}
	switch server.BearerToken(r) {
	case "short":
		return rules.NewIdentity(&rules.Token{Subject: "carol", Expires: time.Now().Add(time.Second),
			Grants: &rules.Grants{Call: all, Subscribe: []string{">"}}}), nil
	case "carol":
		return rules.NewIdentity(&rules.Token{Subject: "carol", Grants: &rules.Grants{Call: all, Subscribe: []string{"news.>"}}}), nil
	case "carol-add":
		return rules.NewIdentity(&rules.Token{Subject: "carol", Grants: &rules.Grants{Call: &[]string{"add"}}}), nil
	case "carol-narrow":
		return rules.NewIdentity(&rules.Token{Subject: "carol", Grants: &rules.Grants{Call: all, Subscribe: []string{"news.weather"}}}), nil
	case "provider":
		return rules.NewIdentity(&rules.Token{Subject: "svc", Grants: &rules.Grants{Provide: []string{">"}}}), nil
	}
	return nil, server.ErrUnauthorized
}

func expiringHub(t *testing.T) *testHub {
	set := rules.Demo()
	return newTestHub(t, &server.Options{
		Hub:          hub.New(&hub.Options{Policy: set.Policy}),
		Authorize:    set.Authorize,
		Authenticate: expiringAuth,
	})
}

// switchable sends the token it holds now with each request.
type switchable struct{ token atomic.Value }

func (s *switchable) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+s.token.Load().(string))
	return http.DefaultTransport.RoundTrip(r)
}

// connectWith opens a session whose requests carry tok's token of the
// moment.
func (th *testHub) connectWith(t *testing.T, tok *switchable, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1.0.0"}, opts)
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Wait)
	defer cancel()
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: th.URL + "/mcp", HTTPClient: &http.Client{Transport: tok}}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// errSucceeded stands for a call that came back with a result.
var errSucceeded = errors.New("succeeded")

// A session ends when the token of its latest request expires: its call
// running is cancelled at the provider, and the session is gone, as a
// WebSocket is closed with 4001.
func TestTokenExpiryEndsSession(t *testing.T) {
	th := expiringHub(t)
	started, cancelled := make(chan struct{}, 1), make(chan struct{}, 1)
	th.provider(t, "provider", "svc.wait", peer.Func(func(ctx context.Context, _ struct{}) (string, error) {
		started <- struct{}{}
		<-ctx.Done()
		cancelled <- struct{}{}
		return "", ctx.Err()
	}))
	tok := &switchable{}
	tok.token.Store("short")
	cs := th.connectWith(t, tok, nil)
	errc := make(chan error, 1)
	go func() {
		res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "svc.wait"})
		if err == nil && !res.IsError {
			err = errSucceeded
		}
		errc <- err
	}()
	testkit.Recv(t, started, "the call at the provider")
	// No request comes after the call's: its token's expiry ends the
	// session. The call ends as an error: the session's (it is gone), or
	// the provider's -32002 when its answer got out first.
	testkit.Recv(t, cancelled, "rpc.cancel at the provider once the token expired")
	if err := testkit.Recv(t, errc, "the call's end"); err == nil || errors.Is(err, errSucceeded) {
		t.Error("the call of an expired session succeeded")
	}
	if _, err := cs.ListTools(t.Context(), nil); err == nil {
		t.Error("the session of an expired token still answers")
	}
}

// A subscription made before the session's token narrows sends nothing
// once the latest token no longer lets it subscribe.
func TestNarrowedTokenEndsSubscription(t *testing.T) {
	th := expiringHub(t)
	h := th.srv.Hub()
	updated := make(chan string, 16)
	tok := &switchable{}
	tok.token.Store("carol")
	cs := th.connectWith(t, tok, &sdk.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *sdk.ResourceUpdatedNotificationRequest) { updated <- r.Params.URI },
	})
	ctx := t.Context()
	const sport, weather = "switchboard://topic/news.sport", "switchboard://topic/news.weather"
	for _, uri := range []string{sport, weather} {
		if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: uri}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.Publish(ctx, "news.sport", "kick-off"); err != nil {
		t.Fatal(err)
	}
	if got := testkit.Recv(t, updated, "resources/updated"); got != sport {
		t.Fatalf("updated %q, want %q", got, sport)
	}

	// The next request brings a narrower token: news.sport is no longer
	// the session's to follow.
	tok.token.Store("carol-narrow")
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	// A witness, still allowed, is told of news.sport: the notification
	// to carol, had it gone, went in the same round, before the next.
	witnessed := make(chan string, 16)
	wtok := &switchable{}
	wtok.token.Store("carol")
	witness := th.connectWith(t, wtok, &sdk.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *sdk.ResourceUpdatedNotificationRequest) { witnessed <- r.Params.URI },
	})
	if err := witness.Subscribe(ctx, &sdk.SubscribeParams{URI: sport}); err != nil {
		t.Fatal(err)
	}
	_, _ = h.Publish(ctx, "news.sport", "goal")
	testkit.Recv(t, witnessed, "the witness's resources/updated")
	_, _ = h.Publish(ctx, "news.weather", "sunny")
	if got := testkit.Recv(t, updated, "resources/updated"); got != weather {
		t.Errorf("updated %q after the token narrowed, want %q", got, weather)
	}
	// Subscribing again is refused with the reason.
	if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: sport}); err == nil {
		t.Error("subscribed again to news.sport with the narrower token")
	}
}

// A request with a token of other grants has the session told that its
// tool list changed, and the list follows the new grants.
func TestNarrowedTokenChangesTools(t *testing.T) {
	th := expiringHub(t)
	th.provider(t, "provider", "page.summary", peer.Func(func(context.Context, struct{}) (string, error) { return "hi", nil }))
	changed := make(chan struct{}, 16)
	tok := &switchable{}
	tok.token.Store("carol")
	cs := th.connectWith(t, tok, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
	})
	if names := toolNames(t, cs); !has(names, "page.summary") || !has(names, "add") {
		t.Fatalf("carol lists %v, want add and page.summary", names)
	}
	tok.token.Store("carol-add")
	if err := cs.Ping(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	testkit.Recv(t, changed, "list_changed once the token narrowed")
	if names := toolNames(t, cs); has(names, "page.summary") || !has(names, "add") {
		t.Errorf("carol lists %v with the narrower token, want add only", names)
	}
}

// ToolsChanged, after the policy changed (rules reloaded), has the
// sessions told when what they may list changed.
func TestToolsChangedByPolicy(t *testing.T) {
	var hidden atomic.Bool
	policy := func(ctx context.Context, a hub.Action, target string) error {
		if a == hub.Call && target == "page.summary" && hidden.Load() {
			return &peer.Error{Code: peer.CodeUnauthorized, Message: "Unauthorized"}
		}
		return nil
	}
	th := newTestHub(t, &server.Options{Hub: hub.New(&hub.Options{Policy: policy})})
	th.provider(t, "", "page.summary", peer.Func(func(context.Context, struct{}) (string, error) { return "hi", nil }))
	changed := make(chan struct{}, 16)
	cs := th.connect(t, "", &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
	})
	if names := toolNames(t, cs); !has(names, "page.summary") {
		t.Fatalf("lists %v, want page.summary", names)
	}
	hidden.Store(true)
	th.mcp.ToolsChanged()
	testkit.Recv(t, changed, "list_changed once the policy changed")
	if names := toolNames(t, cs); has(names, "page.summary") {
		t.Errorf("lists %v once the policy hides page.summary", names)
	}
}
