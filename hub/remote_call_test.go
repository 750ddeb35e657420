package hub_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
)

// The calls another node sends (ServeRemoteCall, as a Directory makes
// them) take the path of a local caller's.

// Shutdown waits for a call forwarded from another node, whose caller
// gets the provider's answer.
func TestRemoteCallShutdownWaits(t *testing.T) {
	r := &relay{}
	rh := startHub(t, &hub.Options{Broker: r})
	svc := newService(t, "svc")
	provide(t, rh.dial(t, svc), "billing.hold")
	type answer struct {
		res json.RawMessage
		err error
	}
	answers := make(chan answer, 1)
	go func() {
		res, err := r.h.ServeRemoteCall(context.Background(), hub.RemoteCall{Method: "billing.hold"})
		answers <- answer{res, err}
	}()
	testkit.Recv(t, svc.started, "the service started")
	done := rh.startShutdown(t)
	svc.free()
	if a := testkit.Recv(t, answers, "the answer"); a.err != nil || string(a.res) != `"svc"` {
		t.Fatalf("got %s, %v; want the provider's answer", a.res, a.err)
	}
	if err := testkit.Recv(t, done, "Shutdown"); err != nil {
		t.Fatal(err)
	}
}

// A remote caller's cancel reaches the provider, and the caller gets the
// provider's own answer, with its progress before it.
func TestRemoteCallCancel(t *testing.T) {
	r := &relay{}
	rh := startHub(t, &hub.Options{Broker: r})
	svc := newService(t, "svc")
	provide(t, rh.dial(t, svc), "billing.wait")
	progress := make(chan string, 2)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := r.h.ServeRemoteCall(ctx, hub.RemoteCall{Method: "billing.wait", Progress: func(data json.RawMessage) {
			progress <- string(data)
		}})
		errc <- err
	}()
	for _, want := range []string{`{"step":1}`, `{"step":2}`} {
		if got := testkit.Recv(t, progress, "progress"); got != want {
			t.Fatalf("progress %s, want %s", got, want)
		}
	}
	testkit.Recv(t, svc.started, "the service started")
	cancel()
	if err := testkit.Recv(t, svc.ended, "the service ended"); !errors.Is(err, context.Canceled) {
		t.Fatalf("the provider's handler ended with %v", err)
	}
	var e *peer.Error
	if err := testkit.Recv(t, errc, "the answer"); !errors.As(err, &e) || e.Code != peer.CodeCancelled || e.Message != "stopped by svc" {
		t.Fatalf("got %v, want the provider's -32002", err)
	}
}
