package mcp_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/switchboard-rpc/switchboard/client"
	"github.com/switchboard-rpc/switchboard/peer"
)

// The cost of a tool call against the same call forwarded for a peer: a
// provided method that adds two numbers, called one at a time through
// /mcp by the SDK's client, through POST /rpc, and over a WebSocket.

func provideSum(b *testing.B, th *testHub) {
	ctx := context.Background()
	c, err := client.Dial(ctx, th.wsURL(), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	if _, err := c.Provide(ctx, "calc.sum", peer.Func(func(_ context.Context, p sumParams) (float64, error) { return p.A + p.B, nil })); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkToolCall(b *testing.B) {
	th := newTestHub(b, nil)
	provideSum(b, th)
	c := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := c.Connect(b.Context(), &sdk.StreamableClientTransport{Endpoint: th.URL + "/mcp"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cs.Close() })
	args := map[string]any{"a": 1, "b": 2}
	for b.Loop() {
		res, err := cs.CallTool(b.Context(), &sdk.CallToolParams{Name: "calc.sum", Arguments: args})
		if err != nil || res.IsError {
			b.Fatal(res, err)
		}
	}
}

func BenchmarkForwardedPOST(b *testing.B) {
	th := newTestHub(b, nil)
	provideSum(b, th)
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"calc.sum","params":{"a":1,"b":2}}`)
	for b.Loop() {
		resp, err := http.Post(th.URL+"/rpc", "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

func BenchmarkForwardedWebSocket(b *testing.B) {
	th := newTestHub(b, nil)
	provideSum(b, th)
	c, err := client.Dial(b.Context(), th.wsURL(), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	var sum float64
	for b.Loop() {
		if err := c.Call(b.Context(), "calc.sum", sumParams{1, 2}, &sum); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkToolsList lists 1,000 methods one peer provides and describes.
func BenchmarkToolsList(b *testing.B) {
	th := newTestHub(b, nil)
	ctx := context.Background()
	c, err := client.Dial(ctx, th.wsURL(), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	for i := range 1000 {
		if _, err := c.ProvideDescribed(ctx, fmt.Sprintf("bench.m%04d", i), peer.Func(func(_ context.Context, p sumParams) (float64, error) { return p.A + p.B, nil }),
			client.Description{Summary: "Adds two numbers", Params: map[string]string{"a": "the first"}}); err != nil {
			b.Fatal(err)
		}
	}
	sc := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := sc.Connect(b.Context(), &sdk.StreamableClientTransport{Endpoint: th.URL + "/mcp"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cs.Close() })
	for b.Loop() {
		n := 0
		for _, err := range cs.Tools(b.Context(), nil) {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n < 1000 {
			b.Fatalf("%d tools", n)
		}
	}
}
