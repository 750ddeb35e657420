package browser_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

// TestPageProvidesMCPTool: a page provides page.summary with
// switchboard.js, described; an agent (the Go SDK's MCP client) is told
// its tool list changed, lists the tool with its description and input
// schema, calls it, and cancels a call of another, which aborts the
// page's handler.
func TestPageProvidesMCPTool(t *testing.T) {
	tb, h := openClientPage(t)
	ctx := t.Context()

	changed := make(chan struct{}, 16)
	agent := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "1.0.0"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
	})
	cctx, cancel := context.WithTimeout(ctx, testkit.Wait)
	defer cancel()
	cs, err := agent.Connect(cctx, &sdk.StreamableClientTransport{Endpoint: h.URL() + "/mcp", HTTPClient: &http.Client{}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	eval[bool](tb, `(async () => {
  window.page = await sb.connect(hub);
  let started, cancelled;
  window.started = new Promise((r) => (started = r));
  window.cancelled = new Promise((r) => (cancelled = r));
  await page.provide("page.summary", ({ words }) => document.title + " in " + words + " words", {
    description: "Summarizes the open page",
    params: { type: "object", properties: { words: { type: "integer" } }, required: ["words"] },
  });
  await page.provide("page.wait", (_p, { signal }) => new Promise((_, reject) => {
    started(true);
    signal.addEventListener("abort", () => { cancelled(signal.reason.code); reject(signal.reason); });
  }));
  return true;
})()`)
	testkit.Recv(t, changed, "list_changed once the page provides")

	var tool *sdk.Tool
	for x, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if x.Name == "page.summary" {
			tool = x
		}
	}
	if tool == nil {
		t.Fatal("page.summary not listed")
	}
	schema, _ := json.Marshal(tool.InputSchema)
	testkit.JSONEqual(t, `{"type":"object","properties":{"words":{"type":"integer"}},"required":["words"]}`, string(schema))
	if tool.Description != "Summarizes the open page" {
		t.Errorf("description %q", tool.Description)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "page.summary", Arguments: map[string]any{"words": 3}})
	if err != nil || res.IsError || res.Content[0].(*sdk.TextContent).Text != `"client test in 3 words"` {
		t.Fatalf("page.summary = %+v, %v", res, err)
	}

	wctx, wcancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(wctx, &sdk.CallToolParams{Name: "page.wait"})
		errc <- err
	}()
	eval[bool](tb, `window.started`) // the call reached the page
	wcancel()
	if code := eval[int](tb, `window.cancelled`); code != -32002 {
		t.Errorf("the page's handler aborted with %d, want -32002 (rpc.cancel)", code)
	}
	if err := testkit.Recv(t, errc, "the cancelled call"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call: %v", err)
	}
}
