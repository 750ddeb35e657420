package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The mcp scenarios measure the hub's MCP endpoint (/mcp, on with -demo)
// against what it maps onto, each leg in the same run and on the same
// hub. Their figure is the hub's CPU time per operation, from its
// process_cpu_seconds_total, in nanoseconds; the MCP client (the Go SDK's)
// runs in this process, so its own cost is not counted.
//
//   - mcp: sequential tools/call of bench.echo, which a raw peer provides,
//     against the same call as an HTTP POST to /rpc, which the hub
//     forwards to the same peer: MCP is HTTP POSTs too, so the ratio is
//     what MCP and its SDK add to a forwarded call. Target: within 1.5x.
//   - mcp-list: sequential tools/list (every page) with 1,000 methods
//     provided and described by one peer, against rpc.discover as an
//     HTTP POST, which lists the same methods. No target.

// mcpMethods is how many methods the mcp-list scenario's peer provides.
const mcpMethods = 1000

// mcpProvider provides methods on a new connection to u, answering their
// calls with [1] and rpc.discover with doc (nil: as a call); stop
// withdraws them, as a provider that leaves in good order does, and then
// closes it and waits: a provider closed at once may still be picked by
// the hub for the next scenario's first call, which then gets -32006.
func mcpProvider(ctx context.Context, u string, methods []string, doc []byte) (stop func(), err error) {
	c, err := dial(ctx, u)
	if err != nil {
		return nil, err
	}
	req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "rpc.provide", "params": map[string]any{"methods": methods}, "id": 1})
	if msg, err := c.roundTrip(req); err != nil || !bytes.Contains(msg, []byte(`"result"`)) {
		c.close()
		return nil, fmt.Errorf("rpc.provide: %s, %v", msg, err)
	}
	var wg sync.WaitGroup
	withdrawn := make(chan struct{})
	wg.Go(func() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		for {
			msg, err := c.read()
			if err != nil {
				return
			}
			m.ID, m.Method = nil, ""
			if json.Unmarshal(msg, &m) != nil || m.ID == nil {
				continue
			}
			if m.Method == "" {
				if string(m.ID) == `"withdraw"` {
					close(withdrawn)
				}
				continue
			}
			result := []byte(`[1]`)
			if m.Method == "rpc.discover" && doc != nil {
				result = doc
			}
			reply := append(append(append(append([]byte(`{"jsonrpc":"2.0","id":`), m.ID...), `,"result":`...), result...), '}')
			if c.ws.Write(context.Background(), websocket.MessageText, reply) != nil {
				return
			}
		}
	})
	return func() {
		bye, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "rpc.unprovide", "params": map[string]any{"methods": methods}, "id": "withdraw"})
		if c.ws.Write(ctx, websocket.MessageText, bye) == nil {
			select {
			case <-withdrawn:
			case <-time.After(10 * time.Second):
			case <-ctx.Done():
			}
		}
		c.close()
		wg.Wait()
	}, nil
}

// mcpDoc is the rpc.discover document of the mcp-list peer: each method
// takes a string and a number by name.
func mcpDoc(methods []string) []byte {
	type param struct {
		Name     string         `json:"name"`
		Required bool           `json:"required,omitempty"`
		Schema   map[string]any `json:"schema"`
	}
	list := make([]map[string]any, len(methods))
	for i, m := range methods {
		list[i] = map[string]any{"name": m, "summary": "Method " + strconv.Itoa(i) + " of the benchmark", "paramStructure": "by-name",
			"params": []param{{"text", true, map[string]any{"type": "string"}}, {"count", false, map[string]any{"type": "integer"}}},
			"result": map[string]any{"name": "result", "schema": map[string]any{}}}
	}
	b, _ := json.Marshal(map[string]any{"openrpc": "1.3.2", "info": map[string]any{"title": "bench", "version": "1"}, "methods": list})
	return b
}

// httpBase is the http(s) URL of the hub at the WebSocket URL u, with path.
func httpBase(u, path string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	p.Scheme = map[string]string{"ws": "http", "wss": "https"}[p.Scheme]
	p.Path, p.RawQuery = path, ""
	return p.String()
}

// cpuPerOp runs op sequentially for l.duration (after a tenth of it to
// warm up) and returns the hub's CPU time per op, in nanoseconds, with the
// ops' latencies.
func cpuPerOp(ctx context.Context, l *load, u string, op func() error) (figure, error) {
	murl := l.metricsURL(u)
	if _, err := calls(op, time.Now().Add(l.duration/10), nil); err != nil {
		return figure{}, err
	}
	before, err := metric(ctx, murl, "process_cpu_seconds_total")
	if err != nil {
		return figure{}, err
	}
	start := time.Now()
	lat, err := calls(op, start.Add(l.duration), make([]time.Duration, 0, 1<<14))
	if err != nil {
		return figure{}, err
	}
	elapsed := time.Since(start)
	after, err := metric(ctx, murl, "process_cpu_seconds_total")
	if err != nil {
		return figure{}, err
	}
	f := rate(len(lat), elapsed, lat)
	f.value = (after - before) * 1e9 / float64(len(lat))
	return f, nil
}

// mcpSession opens an MCP session on the hub at u; close ends it.
func mcpSession(ctx context.Context, u string) (*sdk.ClientSession, error) {
	c := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1.0.0"}, nil)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: httpBase(u, "/mcp"), DisableStandaloneSSE: true}, nil)
}

// postOp is an op that POSTs body to the hub's /rpc and checks that the
// answer is a result.
func postOp(ctx context.Context, u string, body []byte) func() error {
	hc := &http.Client{Timeout: 30 * time.Second}
	rpcURL := httpBase(u, "/rpc")
	return func() error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, rpcURL, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err == nil && !bytes.Contains(b, []byte(`"result"`)) {
			err = fmt.Errorf("POST /rpc: %.200s", b)
		}
		return err
	}
}

// mcpCallScenario: sequential tools/call of a provided method.
func mcpCallScenario(ctx context.Context, l *load, u string) (figure, error) {
	stop, err := mcpProvider(ctx, u, []string{"bench.echo"}, nil)
	if err != nil {
		return figure{}, err
	}
	defer stop()
	cs, err := mcpSession(ctx, u)
	if err != nil {
		return figure{}, err
	}
	defer cs.Close()
	params := &sdk.CallToolParams{Name: "bench.echo", Arguments: map[string]any{"n": 1}}
	return cpuPerOp(ctx, l, u, func() error {
		res, err := cs.CallTool(ctx, params)
		if err == nil && res.IsError {
			err = fmt.Errorf("tools/call: %+v", res.Content)
		}
		return err
	})
}

// mcpForwardedScenario: the same call as an HTTP POST to /rpc.
func mcpForwardedScenario(ctx context.Context, l *load, u string) (figure, error) {
	stop, err := mcpProvider(ctx, u, []string{"bench.echo"}, nil)
	if err != nil {
		return figure{}, err
	}
	defer stop()
	return cpuPerOp(ctx, l, u, postOp(ctx, u, []byte(`{"jsonrpc":"2.0","method":"bench.echo","params":{"n":1},"id":1}`)))
}

// listProvider provides and describes mcpMethods methods.
func listProvider(ctx context.Context, u string) (stop func(), err error) {
	methods := make([]string, mcpMethods)
	for i := range methods {
		methods[i] = fmt.Sprintf("bench.m%04d", i)
	}
	return mcpProvider(ctx, u, methods, mcpDoc(methods))
}

// mcpListScenario: sequential tools/list, every page, with mcpMethods
// methods provided.
func mcpListScenario(ctx context.Context, l *load, u string) (figure, error) {
	stop, err := listProvider(ctx, u)
	if err != nil {
		return figure{}, err
	}
	defer stop()
	cs, err := mcpSession(ctx, u)
	if err != nil {
		return figure{}, err
	}
	defer cs.Close()
	return cpuPerOp(ctx, l, u, func() error {
		n := 0
		for _, err := range cs.Tools(ctx, nil) {
			if err != nil {
				return err
			}
			n++
		}
		if n < mcpMethods {
			return fmt.Errorf("tools/list: %d tools, want at least %d", n, mcpMethods)
		}
		return nil
	})
}

// discoverScenario: sequential rpc.discover as an HTTP POST, with the
// same methods provided.
func discoverScenario(ctx context.Context, l *load, u string) (figure, error) {
	stop, err := listProvider(ctx, u)
	if err != nil {
		return figure{}, err
	}
	defer stop()
	return cpuPerOp(ctx, l, u, postOp(ctx, u, []byte(`{"jsonrpc":"2.0","method":"rpc.discover","id":1}`)))
}
