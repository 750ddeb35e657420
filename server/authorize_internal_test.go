package server

import (
	"context"
	"testing"

	"github.com/switchboard-rpc/switchboard/peer"
)

func TestAuthorizerKeepsInline(t *testing.T) {
	mux := peer.NewMux()
	noop := peer.HandlerFunc(func(context.Context, *peer.Request) (any, error) { return nil, nil })
	mux.Handle("event", noop, peer.Inline)
	mux.Handle("call", noop)
	a := authorizer{mux, func(context.Context, string) error { return nil }, New(nil)}
	if _, mode := a.Lookup("event"); mode != peer.Inline {
		t.Error("an inline handler lost its mark when wrapped")
	}
	if _, mode := a.Lookup("call"); mode == peer.Inline {
		t.Error("a plain handler became inline when wrapped")
	}
}
