package natsbroker_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/hub/natsbroker"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
)

// describedProvider returns provider's mux with an rpc.discover that
// describes svc.echo, and other.thing, which it does not provide.
func describedProvider(name string) peer.Router {
	mux := provider(name, nil, nil)
	describe := peer.HandlerFunc(func(context.Context, *peer.Request) (any, error) {
		return json.RawMessage(`{"openrpc":"1.3.2","info":{"title":"svc","version":"1"},"methods":[
			{"name":"svc.echo","params":[{"name":"text","schema":{"type":"string"}}],"result":{"name":"echo","schema":{}}},
			{"name":"other.thing","params":[]}]}`), nil
	})
	return routerFunc(func(method string) (peer.Handler, peer.Mode) {
		if method == "rpc.discover" {
			return describe, peer.Concurrent
		}
		return mux.Lookup(method)
	})
}

type discovered struct {
	Name   string
	Params []struct{ Name string }
}

// discover calls rpc.discover on n and returns its methods by name.
func discover(t *testing.T, n *node) map[string]discovered {
	t.Helper()
	c, _ := join(t, n, nil, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var doc struct{ Methods []discovered }
	if err := c.Call(ctx, "rpc.discover", nil, &doc); err != nil {
		t.Fatal(err)
	}
	out := make(map[string]discovered)
	for _, m := range doc.Methods {
		if _, dup := out[m.Name]; dup {
			t.Errorf("%s listed twice", m.Name)
		}
		out[m.Name] = m
	}
	return out
}

func wantEcho(t *testing.T, methods map[string]discovered) {
	t.Helper()
	m, ok := methods["svc.echo"]
	if !ok {
		t.Fatalf("svc.echo missing from %v", methods)
	}
	if len(m.Params) != 1 || m.Params[0].Name != "text" {
		t.Errorf("svc.echo described as %+v, want its provider's description", m)
	}
	if _, ok := methods["other.thing"]; ok {
		t.Error("other.thing listed: its provider describes it but does not provide it")
	}
}

// rpc.discover on a node lists the methods provided on another, as their
// provider describes them.
func TestDiscoverAcrossNodes(t *testing.T) {
	url := startNATS(t)
	a := startRouteNode(t, url, "a", nil)
	b := startRouteNode(t, url, "b", nil)
	prov, _ := join(t, b, describedProvider("b"), nil)
	provide(t, prov, "svc.*")
	eventually(t, a, "a to learn b's provider", func() bool { return a.b.Provides("svc.echo") })

	wantEcho(t, discover(t, a))
	wantEcho(t, discover(t, b)) // and b lists its own once, not again from a
}

// A node that does not answer in time describes nothing; the others'
// methods are still listed.
func TestDiscoverSilentNode(t *testing.T) {
	natsbroker.SetDiscoverWait(t, 200*time.Millisecond)
	url := startNATS(t)
	a := startRouteNode(t, url, "a", nil)
	b := startRouteNode(t, url, "b", nil)
	prov, _ := join(t, b, describedProvider("b"), nil)
	provide(t, prov, "svc.*")

	// Node c announces a provider of quiet.job, and never answers.
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	asked := make(chan struct{}, 16)
	if _, err := nc.Subscribe("switchboard.discover", func(*nats.Msg) { asked <- struct{}{} }); err != nil {
		t.Fatal(err)
	}
	announce, _ := json.Marshal(map[string]any{"node": "c", "providers": []hub.Provider{{Peer: "x", Methods: []string{"quiet.job"}}}})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(heartbeat / 2)
		defer tick.Stop()
		for {
			_ = nc.Publish("switchboard.dir.c", announce)
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})
	defer wg.Wait()
	defer close(stop)
	eventually(t, a, "a to learn b's and c's providers", func() bool {
		return a.b.Provides("svc.echo") && a.b.Provides("quiet.job")
	})

	start := time.Now()
	methods := discover(t, a)
	took := time.Since(start)
	wantEcho(t, methods)
	if _, ok := methods["quiet.job"]; ok {
		t.Error("quiet.job listed, but its node did not describe it")
	}
	select {
	case <-asked:
	case <-time.After(testkit.Wait):
		t.Error("c was not asked")
	}
	if took > 5*time.Second {
		t.Errorf("rpc.discover took %v waiting for a silent node", took)
	}
}
