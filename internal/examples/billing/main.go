// Command billing is an example service: it connects to a Switchboard hub
// as a peer and provides billing.charge and billing.refund to every other
// peer of the hub, browsers and scripts alike, which call them through the
// hub as if the hub served them.
//
//	go run ./internal/examples/billing -url ws://127.0.0.1:8080/rpc
//
// The hub must let it provide methods: any peer may on a hub started with
// -demo. It runs until interrupted, and reconnects and provides its
// methods again when the connection drops.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/switchboard-rpc/switchboard/client"
	"github.com/switchboard-rpc/switchboard/peer"
)

func main() {
	url := flag.String("url", "ws://127.0.0.1:8080/rpc", "the hub's WebSocket `URL`")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("billing: ")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *url); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, url string) error {
	c, err := client.Dial(ctx, url, &client.Options{Token: os.Getenv("HUB_TOKEN")})
	if err != nil {
		return err
	}
	defer c.Close()
	var b billing
	if _, err := c.Provide(ctx, "billing.charge", peer.Func(b.charge)); err != nil {
		return err
	}
	if _, err := c.Provide(ctx, "billing.refund", peer.Func(b.refund)); err != nil {
		return err
	}
	log.Print("providing billing.charge and billing.refund")
	select {
	case <-ctx.Done():
		return nil
	case <-c.Done():
		return c.Err()
	}
}

// billing keeps nothing but a receipt counter: a real service would talk
// to a payment provider here.
type billing struct{ receipts atomic.Int64 }

// ChargeParams are the params of billing.charge, by name or by position.
type ChargeParams struct {
	Account string `json:"account"`
	Cents   int    `json:"cents"`
}

// Receipt is the result of billing.charge and billing.refund.
type Receipt struct {
	Receipt string `json:"receipt"`
	Account string `json:"account"`
	Cents   int    `json:"cents"`
}

// errAmount is an application error with a code of the service's own.
var errAmount = &peer.Error{Code: 4001, Message: "the amount must be positive"}

// charge takes a while, as a payment does: it reports each step to the
// caller with rpc.progress, and stops when the caller cancels.
func (b *billing) charge(ctx context.Context, p ChargeParams) (Receipt, error) {
	if p.Cents <= 0 {
		return Receipt{}, errAmount
	}
	for _, step := range []string{"authorizing", "capturing"} {
		if err := peer.Progress(ctx, step); err != nil {
			return Receipt{}, err
		}
		select {
		case <-time.After(300 * time.Millisecond):
		case <-ctx.Done():
			return Receipt{}, ctx.Err()
		}
	}
	return b.receipt(p.Account, p.Cents), nil
}

// RefundParams are the params of billing.refund.
type RefundParams struct {
	Receipt string `json:"receipt"`
	Account string `json:"account"`
	Cents   int    `json:"cents"`
}

func (b *billing) refund(_ context.Context, p RefundParams) (Receipt, error) {
	if p.Cents <= 0 {
		return Receipt{}, errAmount
	}
	return b.receipt(p.Account, -p.Cents), nil
}

func (b *billing) receipt(account string, cents int) Receipt {
	return Receipt{Receipt: fmt.Sprintf("r-%d", b.receipts.Add(1)), Account: account, Cents: cents}
}
