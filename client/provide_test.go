package client

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/internal/hubtest"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
)

type chargeParams struct {
	Amount int `json:"amount"`
}

func charge(_ context.Context, p chargeParams) (string, error) {
	if p.Amount <= 0 {
		return "", &peer.Error{Code: 4001, Message: "nothing to charge"}
	}
	return "charged", nil
}

// A client provides methods by name and by pattern; another calls them
// through the hub.
func TestProvide(t *testing.T) {
	h := hubtest.Start(t, nil)
	service := dial(t, h.WS(), nil)
	caller := dial(t, h.WS(), nil)

	if _, err := service.Provide(ctx(t), "billing.charge", peer.Func(charge)); err != nil {
		t.Fatal(err)
	}
	refunds, err := service.Provide(ctx(t), "refund.*", peer.HandlerFunc(func(_ context.Context, req *peer.Request) (any, error) {
		return "refunded by " + req.Method, nil
	}))
	if err != nil {
		t.Fatal(err)
	}

	var got string
	if err := caller.Call(ctx(t), "billing.charge", chargeParams{Amount: 5}, &got); err != nil || got != "charged" {
		t.Fatalf("billing.charge = %q, %v", got, err)
	}
	hubtest.WantCode(t, caller.Call(ctx(t), "billing.charge", chargeParams{}, nil), 4001)
	if err := caller.Call(ctx(t), "refund.card", nil, &got); err != nil || got != "refunded by refund.card" {
		t.Fatalf("refund.card = %q, %v", got, err)
	}
	// The methods the service provides by name are described.
	var doc testkit.Discovery
	if err := caller.Call(ctx(t), "rpc.discover", nil, &doc); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range doc.Methods {
		if m.Name == "billing.charge" {
			found = len(m.Params) == 1 && m.Params[0].Name == "amount"
		}
	}
	if !found {
		t.Fatalf("billing.charge missing or wrong in %+v", doc.Methods)
	}

	if err := refunds.Withdraw(ctx(t)); err != nil {
		t.Fatal(err)
	}
	hubtest.WantCode(t, caller.Call(ctx(t), "refund.card", nil, nil), peer.CodeMethodNotFound)
	if err := refunds.Withdraw(ctx(t)); err != nil {
		t.Fatalf("a second Withdraw: %v", err)
	}
	// Withdrawn, the pattern may be provided again.
	again, err := service.Provide(ctx(t), "refund.*", peer.HandlerFunc(func(context.Context, *peer.Request) (any, error) {
		return "again", nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	if err := caller.Call(ctx(t), "refund.card", nil, &got); err != nil || got != "again" {
		t.Fatalf("refund.card = %q, %v", got, err)
	}
	if err := again.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestProvideRefused(t *testing.T) {
	h := hubtest.Start(t, nil)
	c := dial(t, h.WS(), nil)
	ok := peer.Func(charge)
	if _, err := c.Provide(ctx(t), "rpc.mine", ok); err == nil {
		t.Fatal("provided rpc.mine")
	}
	if _, err := c.Provide(ctx(t), "a", nil); err == nil {
		t.Fatal("provided a nil handler")
	}
	if _, err := c.Provide(ctx(t), "a", ok); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Provide(ctx(t), "a", ok); err == nil || !strings.Contains(err.Error(), "provided already") {
		t.Fatalf("provided a twice: %v", err)
	}
	// The hub refuses a malformed name; the client keeps nothing of it.
	hubtest.WantCode(t, func() error { _, err := c.Provide(ctx(t), "a..b", ok); return err }(), peer.CodeInvalidParams)
	if got := c.prov.methods(); len(got) != 1 || got[0] != "a" {
		t.Fatalf("provisions %q", got)
	}
}

// After a reconnection, the client provides its methods again.
func TestProvideAfterReconnect(t *testing.T) {
	h := hubtest.Start(t, nil)
	states := newStateLog()
	service := dial(t, h.WS(), &Options{
		MinBackoff: 10 * time.Millisecond,
		MaxBackoff: 100 * time.Millisecond,
		OnState:    states.on,
	})
	if _, err := service.Provide(ctx(t), "billing.*", peer.Func(charge)); err != nil {
		t.Fatal(err)
	}
	h.Stop()
	states.until(t, StateDisconnected)
	h.Start()
	states.until(t, StateConnected)
	caller := dial(t, h.WS(), nil)
	var got string
	if err := caller.Call(ctx(t), "billing.charge", chargeParams{Amount: 1}, &got); err != nil || got != "charged" {
		t.Fatalf("after the reconnection: %q, %v", got, err)
	}
}

// Progress and cancellation pass between the client calling and the
// client providing.
func TestProvideProgressAndCancel(t *testing.T) {
	h := hubtest.Start(t, nil)
	service := dial(t, h.WS(), nil)
	ended := make(chan error, 1)
	_, err := service.Provide(ctx(t), "job.run", peer.HandlerFunc(func(ctx context.Context, _ *peer.Request) (any, error) {
		if err := peer.Progress(ctx, "halfway"); err != nil {
			return nil, err
		}
		<-ctx.Done()
		ended <- ctx.Err()
		return nil, ctx.Err()
	}))
	if err != nil {
		t.Fatal(err)
	}
	caller := dial(t, h.WS(), nil)
	progress := make(chan string, 1)
	cctx, cancel := context.WithCancel(ctx(t))
	defer cancel()
	cctx = peer.WithProgress(cctx, func(data json.RawMessage) {
		progress <- string(data)
		cancel()
	})
	if err := caller.Call(cctx, "job.run", nil, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if got := testkit.Recv(t, progress, "progress"); got != `"halfway"` {
		t.Fatalf("progress %s", got)
	}
	if err := testkit.Recv(t, ended, "the handler's end"); !errors.Is(err, context.Canceled) {
		t.Fatalf("the handler's context ended with %v", err)
	}
}
