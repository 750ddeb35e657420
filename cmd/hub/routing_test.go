package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
)

// dialPeer connects a peer serving router to the hub at url.
func dialPeer(t *testing.T, url string, router peer.Router) *peer.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Wait)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(url, "http")+"/rpc", nil)
	if err != nil {
		t.Fatal(err)
	}
	c := peer.NewConn(peer.WebSocket(ws), &peer.Options{Router: router})
	served := make(chan struct{})
	go func() { defer close(served); _ = c.Serve(context.Background()) }()
	t.Cleanup(func() { c.Close(); <-served })
	return c
}

// Without -demo, peers may provide methods only with -allow-provide, and
// -forward-timeout bounds the forwarded calls.
func TestAllowProvide(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), testkit.Wait)
	defer cancel()
	url, _ := start(t)
	err := dialPeer(t, url, nil).Call(ctx, "rpc.provide", []string{"svc.*"}, nil)
	var e *peer.Error
	if !errors.As(err, &e) || e.Code != peer.CodeUnauthorized {
		t.Fatalf("rpc.provide without -allow-provide: %v, want -32001", err)
	}

	url, _ = start(t, "-allow-provide", "-forward-timeout", "100ms")
	svc := peer.NewMux()
	svc.HandleFunc("svc.hello", func(context.Context, *peer.Request) (any, error) { return "hello", nil })
	svc.HandleFunc("svc.stuck", func(ctx context.Context, _ *peer.Request) (any, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	if err := dialPeer(t, url, svc).Call(ctx, "rpc.provide", []string{"svc.*"}, nil); err != nil {
		t.Fatal(err)
	}
	caller := dialPeer(t, url, nil)
	var got string
	if err := caller.Call(ctx, "svc.hello", nil, &got); err != nil || got != "hello" {
		t.Fatalf("svc.hello = %q, %v", got, err)
	}
	if err := caller.Call(ctx, "svc.stuck", nil, nil); !errors.As(err, &e) || e.Code != peer.CodeTimeout {
		t.Fatalf("svc.stuck: %v, want -32003 after -forward-timeout", err)
	}
	// Publishing is still refused: only providing was allowed.
	if err := caller.Call(ctx, "rpc.publish", []any{"news", 1}, nil); !errors.As(err, &e) || e.Code != peer.CodeUnauthorized {
		t.Fatalf("rpc.publish: %v, want -32001", err)
	}
}
