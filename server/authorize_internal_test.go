package server

import (
	"context"
	"testing"

	"github.com/switchboard-rpc/switchboard/peer"
)

func TestAuthorizerKeepsInline(t *testing.T) {
	mux := peer.NewMux()
	noop := peer.HandlerFunc(func(context.Context, *peer.Request) (any, error) { return nil, nil })
	mux.Handle("event", peer.Inline(noop))
	mux.Handle("call", noop)
	a := authorizer{mux, func(context.Context, string) error { return nil }}
	if h, _ := a.Lookup("event"); !peer.IsInline(h) {
		t.Error("an inline handler lost its mark when wrapped")
	}
	if h, _ := a.Lookup("call"); peer.IsInline(h) {
		t.Error("a plain handler became inline when wrapped")
	}
}
