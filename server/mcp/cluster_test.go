package mcp_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/hub/natsbroker"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
	"github.com/switchboard-rpc/switchboard/server"
)

// clusterHubs starts a NATS server and two hubs joined over it, each
// serving /mcp, until the end of the test.
func clusterHubs(t *testing.T) [2]*testHub {
	t.Helper()
	ns, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: -1, NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	if !ns.ReadyForConnections(5 * time.Second) {
		t.Fatal("NATS server not ready within 5s")
	}
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	var hubs [2]*testHub
	for i, name := range []string{"n1", "n2"} {
		ctx, cancel := context.WithTimeout(t.Context(), testkit.Wait)
		b, err := natsbroker.Connect(ctx, &natsbroker.Options{URLs: ns.ClientURL(), Node: name, Heartbeat: 100 * time.Millisecond})
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		h := hub.New(&hub.Options{Policy: hub.AllowAll, Broker: b.HubBroker()})
		err = b.Start(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() }) // after the server's shutdown
		hubs[i] = newTestHub(t, &server.Options{Hub: h})
	}
	return hubs
}

// TestClusterToolsFollow: a method provided on another node, that its
// provider does not describe, is listed as taking any object, callable,
// and its coming and going is told to the sessions of this node.
func TestClusterToolsFollow(t *testing.T) {
	hubs := clusterHubs(t)
	changed := make(chan struct{}, 16)
	cs := hubs[0].connect(t, "", &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
	})
	ctx := t.Context()
	conn := dialPeer(t, hubs[1], bare{peer.Func(func(context.Context, struct{}) (string, error) { return "Home", nil })})
	if err := conn.Call(ctx, "rpc.provide", []string{"page.title"}, nil); err != nil {
		t.Fatal(err)
	}
	testkit.Recv(t, changed, "list_changed on n1 once n2's peer provides")
	var found *sdk.Tool
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if tool.Name == "page.title" {
			found = tool
		}
	}
	if found == nil {
		t.Fatal("page.title, provided on n2 and described by nobody, not listed on n1")
	}
	b, _ := json.Marshal(found.InputSchema)
	testkit.JSONEqual(t, `{"type":"object"}`, string(b))
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "page.title"})
	if err != nil || res.IsError || text(res) != `"Home"` {
		t.Fatalf("call page.title = %+v, %v", res, err)
	}
	if err := conn.Call(ctx, "rpc.unprovide", []string{"page.title"}, nil); err != nil {
		t.Fatal(err)
	}
	testkit.Recv(t, changed, "list_changed on n1 once n2's peer withdraws")
	if names := toolNames(t, cs); has(names, "page.title") {
		t.Fatalf("page.title listed once withdrawn on n2: %v", names)
	}
}
