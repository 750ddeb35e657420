package cluster_test

import (
	"context"
	"net/http"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
)

// TestMCPToolOnAnotherNode: a service on n2 provides a described method;
// an MCP session on n1 is told its tool list changed, lists the tool and
// calls it, progress included.
func TestMCPToolOnAnotherNode(t *testing.T) {
	ns := startNATS(t)
	hubs := startNodes(t, ns, 2) // -demo: /mcp is on
	waitLinked(t, hubs[0], 0, true)
	waitLinked(t, hubs[1], 1, true)
	ctx := t.Context()

	changed := make(chan struct{}, 16)
	notes := make(chan *sdk.ProgressNotificationParams, 16)
	c := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "1.0.0"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
		ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
			notes <- r.Params
		},
	})
	cctx, cancel := context.WithTimeout(ctx, testkit.Wait)
	defer cancel()
	cs, err := c.Connect(cctx, &sdk.StreamableClientTransport{Endpoint: hubs[0].URL() + "/mcp", HTTPClient: &http.Client{}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	svc := dial(t, hubs[1])
	type summaryParams struct {
		URL string `json:"url"`
	}
	summary := peer.Func(func(ctx context.Context, p summaryParams) (string, error) {
		_ = peer.Progress(ctx, map[string]any{"progress": 1, "total": 2, "message": "reading"})
		return "a page about " + p.URL, nil
	})
	if _, err := svc.Provide(ctx, "page.summary", summary); err != nil {
		t.Fatal(err)
	}
	testkit.Recv(t, changed, "list_changed on n1 once n2's peer provides")
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, tool := range tools.Tools {
		found = found || tool.Name == "page.summary"
	}
	if !found {
		t.Fatal("page.summary, provided on n2, not listed on n1")
	}
	params := &sdk.CallToolParams{Name: "page.summary", Arguments: map[string]any{"url": "example.com"}}
	params.SetProgressToken("x")
	res, err := cs.CallTool(ctx, params)
	if err != nil || res.IsError || res.Content[0].(*sdk.TextContent).Text != `"a page about example.com"` {
		t.Fatalf("call = %+v, %v", res, err)
	}
	if n := testkit.Recv(t, notes, "progress from n2"); n.Progress != 1 || n.Total != 2 || n.Message != "reading" {
		t.Errorf("progress %+v", n)
	}
}
