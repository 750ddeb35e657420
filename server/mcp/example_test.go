package mcp_test

import (
	"context"
	"fmt"
	"log"
	"net/http/httptest"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-rpc/switchboard/client"
	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/peer"
	"github.com/switchboard-rpc/switchboard/server"
	"github.com/switchboard-rpc/switchboard/server/mcp"
)

// A service provides greet.hello to the hub's peers; an MCP client lists
// it as a tool and calls it through /mcp.
func Example() {
	srv := server.New(&server.Options{Hub: hub.New(&hub.Options{Policy: hub.AllowAll})})
	m := mcp.New(srv, nil)
	srv.Handle("/mcp", m)
	ts := httptest.NewServer(srv)
	defer ts.Close()
	defer srv.Shutdown(context.Background()) //nolint:errcheck // an example
	defer m.Shutdown(context.Background())   //nolint:errcheck
	ctx := context.Background()

	// The service: a Go client peer that provides a described method.
	type helloParams struct {
		Name string `json:"name"`
	}
	svc, err := client.Dial(ctx, "ws"+strings.TrimPrefix(ts.URL, "http")+"/rpc", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer svc.Close()
	hello := peer.Func(func(_ context.Context, p helloParams) (string, error) { return "Hello, " + p.Name, nil })
	if _, err := svc.Provide(ctx, "greet.hello", hello); err != nil {
		log.Fatal(err)
	}

	// The agent's side: the MCP SDK's own client.
	c := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "1.0.0"}, nil)
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: ts.URL + "/mcp"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range tools.Tools {
		fmt.Println("tool:", t.Name)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "greet.hello", Arguments: map[string]any{"name": "agent"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(*sdk.TextContent).Text)
	// Output:
	// tool: greet.hello
	// "Hello, agent"
}
