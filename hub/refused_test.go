package hub_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/server"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// Each request the Policy refuses, or over MaxSubscriptions, is reported
// once to OnRefused, with the peer, the action and the target; what
// Reauthorize takes back is not a refusal. server.Audit logs the reports.
func TestOnRefused(t *testing.T) {
	var (
		mu   sync.Mutex
		got  []hub.Refusal
		deny = errors.New("no")
	)
	core, logs := observer.New(zapcore.DebugLevel)
	audit := server.NewAudit(zap.New(core))
	narrow := false
	rh := startHub(t, &hub.Options{
		MaxSubscriptions: 2,
		Policy: func(_ context.Context, a hub.Action, target string) error {
			mu.Lock()
			defer mu.Unlock()
			if strings.Contains(target, "secret") || narrow && target == "news" {
				return deny
			}
			return nil
		},
		OnRefused: func(ctx context.Context, r hub.Refusal) {
			mu.Lock()
			got = append(got, r)
			mu.Unlock()
			audit.HubRefused(ctx, r)
		},
	})
	c := rh.dial(t, nil)
	for _, call := range []struct{ method, params string }{
		{"rpc.subscribe", `["secret.a"]`},
		{"rpc.subscribe", `["news"]`}, // allowed
		{"rpc.publish", `{"topic":"secret.b","data":1}`},
		{"rpc.provide", `{"methods":["secret.m"]}`},
		{"rpc.presence", `{"topic":"secret.c"}`},
		{"rpc.history", `{"topic":"secret.d"}`},
		{"rpc.subscribe", `["a", "b"]`}, // over MaxSubscriptions
	} {
		err := c.Call(ctx(t), call.method, json.RawMessage(call.params), nil)
		if (err == nil) != !strings.Contains(call.params, "secret") && call.params != `["a", "b"]` {
			t.Errorf("%s %s: %v", call.method, call.params, err)
		}
	}
	if body := rh.post(t, `{"jsonrpc":"2.0","method":"rpc.publish","params":{"topic":"secret.e","data":1},"id":1}`); !strings.Contains(body, "-32001") {
		t.Errorf("POST rpc.publish: %s", body)
	}

	p := rh.h.Peers()[0]
	mu.Lock()
	narrow = true
	mu.Unlock()
	if r, err := p.Reauthorize(hub.WithIdentity(ctx(t), p.Identity())); err != nil || len(r.Topics) != 1 {
		t.Fatalf("Reauthorize: %v, %v", r, err)
	}

	mu.Lock()
	defer mu.Unlock()
	want := []struct {
		action hub.Action
		target string
		peer   bool
		limit  string
	}{
		{hub.Subscribe, "secret.a", true, ""}, {hub.Publish, "secret.b", true, ""}, {hub.Provide, "secret.m", true, ""},
		{hub.Presence, "secret.c", true, ""}, {hub.Subscribe, "secret.d", true, ""}, {hub.Subscribe, "a,b", true, "subscriptions"},
		{hub.Publish, "secret.e", false, ""},
	}
	if len(got) != len(want) {
		t.Fatalf("%d refusals reported, want %d: %v", len(got), len(want), got)
	}
	for i, w := range want {
		r := got[i]
		if r.Action != w.action || r.Target != w.target || (r.Peer != nil) != w.peer || w.peer && r.Peer.ID() != p.ID() ||
			r.Limit != w.limit || w.limit == "" && r.Err != deny {
			t.Errorf("refusal %d: %+v, want %+v", i, r, w)
		}
	}
	lines := logs.FilterMessage("refused").All()
	if len(lines) != len(want) {
		t.Fatalf("%d lines logged, want %d", len(lines), len(want))
	}
	if f := lines[0].ContextMap(); f["action"] != "subscribe" || f["target"] != "secret.a" || f["peer"] != p.ID() || f["kind"] != "rules" {
		t.Errorf("logged: %v", f)
	}
	if f := lines[5].ContextMap(); f["kind"] != "limit" || f["reason"] != "subscriptions" || f["target"] != "a,b" {
		t.Errorf("logged: %v", f)
	}
}
