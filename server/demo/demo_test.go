package demo_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/peer"
	"github.com/switchboard-rpc/switchboard/server/demo"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestSpecExamples(t *testing.T) {
	opts := &peer.Options{Router: demo.Mux()}
	for _, tt := range []struct{ in, want string }{
		{`{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}`, `{"jsonrpc":"2.0","id":1,"result":19}`},
		{`{"jsonrpc":"2.0","method":"subtract","params":[23,42],"id":2}`, `{"jsonrpc":"2.0","id":2,"result":-19}`},
		{`{"jsonrpc":"2.0","method":"subtract","params":{"subtrahend":23,"minuend":42},"id":3}`, `{"jsonrpc":"2.0","id":3,"result":19}`},
		{`{"jsonrpc":"2.0","method":"subtract","params":{"minuend":42,"subtrahend":23},"id":4}`, `{"jsonrpc":"2.0","id":4,"result":19}`},
		{`{"jsonrpc":"2.0","method":"subtract","params":[42],"id":5}`, `{"jsonrpc":"2.0","id":5,"error":{"code":-32602,"message":"Invalid params","data":"missing param \"subtrahend\""}}`},
		{`{"jsonrpc":"2.0","method":"subtract","params":{"minuend":42},"id":6}`, `{"jsonrpc":"2.0","id":6,"error":{"code":-32602,"message":"Invalid params","data":"missing param \"subtrahend\""}}`},
		{`{"jsonrpc":"2.0","method":"update","params":[1,2,3,4,5]}`, ``},
		{`{"jsonrpc":"2.0","method":"foobar"}`, ``},
		{`{"jsonrpc":"2.0","method":"sum","params":[1,2,4],"id":"1"}`, `{"jsonrpc":"2.0","id":"1","result":7}`},
		{`{"jsonrpc":"2.0","method":"get_data","id":"9"}`, `{"jsonrpc":"2.0","id":"9","result":["hello",5]}`},
		{`[{"jsonrpc":"2.0","method":"notify_sum","params":[1,2,4]},{"jsonrpc":"2.0","method":"notify_hello","params":[7]}]`, ``},
		{`{"jsonrpc":"2.0","method":"echo","params":[1,{"a":null}],"id":1}`, `{"jsonrpc":"2.0","id":1,"result":[1,{"a":null}]}`},
		{`{"jsonrpc":"2.0","method":"echo","id":1}`, `{"jsonrpc":"2.0","id":1,"result":null}`},
		{`{"jsonrpc":"2.0","method":"add","params":[1.5,2],"id":1}`, `{"jsonrpc":"2.0","id":1,"result":3.5}`},
		{`{"jsonrpc":"2.0","method":"add","params":{"a":1,"b":2},"id":1}`, `{"jsonrpc":"2.0","id":1,"result":3}`},
		{`{"jsonrpc":"2.0","method":"sleep","params":{"ms":1},"id":1}`, `{"jsonrpc":"2.0","id":1,"result":{"slept":1}}`},
		{`{"jsonrpc":"2.0","method":"sleep","params":{"ms":-1},"id":1}`, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params: ms must be between 0 and 600000"}}`},
		{`{"jsonrpc":"2.0","method":"callback","params":{"method":"x"},"id":1}`, `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"callback needs a WebSocket connection: over HTTP POST there is no peer to call back"}}`},
	} {
		if got := string(peer.Respond(t.Context(), []byte(tt.in), opts)); got != tt.want {
			t.Errorf("%s\n got %s\nwant %s", tt.in, got, tt.want)
		}
	}
}

func TestSleepProgressAndCancel(t *testing.T) {
	a, b := peer.Pipe(nil, &peer.Options{Router: demo.Mux()})
	defer func() { a.Close(); <-a.Done(); <-b.Done() }()

	var mu sync.Mutex
	var reports []int64
	ctx := peer.WithProgress(t.Context(), func(data json.RawMessage) {
		var p demo.SleepResult
		_ = json.Unmarshal(data, &p)
		mu.Lock()
		reports = append(reports, p.Slept)
		mu.Unlock()
	})
	var res demo.SleepResult
	if err := a.Call(ctx, "sleep", demo.SleepParams{MS: 350}, &res); err != nil || res.Slept != 350 {
		t.Fatalf("sleep = %+v, %v", res, err)
	}
	mu.Lock()
	if len(reports) < 2 {
		t.Errorf("progress reports %v, want about 3", reports)
	}
	mu.Unlock()

	// Cancelled by the caller's context: the callee gets rpc.cancel.
	cctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if err := a.Call(cctx, "sleep", demo.SleepParams{MS: 60000}, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cancelled sleep: %v", err)
	}
}

func TestCallback(t *testing.T) {
	client := peer.NewMux()
	client.Handle("name", peer.Func(func(_ context.Context, p []string) (string, error) { return "client " + p[0], nil }))
	client.Handle("fail", peer.Func(func(context.Context, json.RawMessage) (any, error) {
		return nil, peer.Errorf(7, "nope").WithData([]int{1})
	}))
	a, b := peer.Pipe(&peer.Options{Router: client}, &peer.Options{Router: demo.Mux()})
	defer func() { a.Close(); <-a.Done(); <-b.Done() }()

	var got string
	if err := a.Call(t.Context(), "callback", demo.CallbackParams{Method: "name", Params: json.RawMessage(`["x"]`)}, &got); err != nil || got != "client x" {
		t.Fatalf("callback name = %q, %v", got, err)
	}
	err := a.Call(t.Context(), "callback", demo.CallbackParams{Method: "fail"}, nil)
	var e *peer.Error
	if !errors.As(err, &e) || e.Code != 7 || e.Message != "nope" || string(e.Data) != "[1]" {
		t.Fatalf("callback fail = %v", err)
	}
	if err := a.Call(t.Context(), "callback", map[string]any{}, nil); !errors.As(err, &e) || e.Code != peer.CodeInvalidParams {
		t.Fatalf("callback without method = %v", err)
	}
}

// TestDiscoverAgreesWithBinding checks, for every demo method, that the
// rules rpc.discover states are the rules calls meet: a call with every
// required param (by name and by position) is not refused as invalid
// params; leaving out any required param, adding an unknown name, or
// adding a positional param is refused with -32602 naming the param.
func TestDiscoverAgreesWithBinding(t *testing.T) {
	mux := demo.Mux()
	var doc testkit.Discovery
	opts := &peer.Options{Router: mux}
	if err := json.Unmarshal(peer.Respond(t.Context(), []byte(`{"jsonrpc":"2.0","method":"rpc.discover","id":0}`), opts), &struct {
		Result any `json:"result"`
	}{&doc}); err != nil || len(doc.Methods) != len(mux.Methods()) {
		t.Fatalf("rpc.discover: %v, %d methods", err, len(doc.Methods))
	}
	// A value fitting a schema; sleep's ms stays small so calls are quick.
	sample := func(s map[string]any) any {
		switch s["type"] {
		case "number", "integer":
			return 1
		case "string":
			return "ping"
		case "boolean":
			return true
		case "array":
			return []any{}
		case "object":
			return map[string]any{}
		}
		return nil
	}
	call := func(method string, params any) *peer.Error {
		t.Helper()
		req := map[string]any{"jsonrpc": "2.0", "method": method, "id": 1}
		if params != nil {
			req["params"] = params
		}
		b, _ := json.Marshal(req)
		var resp struct{ Error *peer.Error }
		if err := json.Unmarshal(peer.Respond(t.Context(), b, opts), &resp); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		return resp.Error
	}
	invalid := func(e *peer.Error) bool { return e != nil && e.Code == peer.CodeInvalidParams }

	for _, m := range doc.Methods {
		t.Run(m.Name, func(t *testing.T) {
			byName := map[string]any{}
			var byPos []any
			for _, p := range m.Params {
				byPos = append(byPos, sample(p.Schema))
				if p.Required {
					byName[p.Name] = sample(p.Schema)
				}
			}
			switch m.ParamStructure {
			case "either":
				if len(m.Params) == 1 && m.Params[0].Name == "params" {
					return // takes any params: nothing to check
				}
				if e := call(m.Name, byName); invalid(e) {
					t.Errorf("required params by name %v refused: %v", byName, e)
				}
				if e := call(m.Name, byPos); invalid(e) {
					t.Errorf("params by position %v refused: %v", byPos, e)
				}
				for _, p := range m.Params {
					without := maps.Clone(byName)
					delete(without, p.Name)
					e := call(m.Name, without)
					if p.Required != invalid(e) {
						t.Errorf("without %q (required %v): %v", p.Name, p.Required, e)
					}
					if p.Required && (e == nil || string(e.Data) != `"missing param \"`+p.Name+`\""`) {
						t.Errorf("without %q: data %v, want it named", p.Name, e)
					}
				}
				with := maps.Clone(byName)
				with["unknown_param"] = 1
				if e := call(m.Name, with); !invalid(e) || string(e.Data) != `"unknown param \"unknown_param\""` {
					t.Errorf("unknown name: %v", e)
				}
				if e := call(m.Name, append(byPos, 1)); !invalid(e) {
					t.Errorf("one positional param too many: %v", e)
				}
			case "by-position":
				if e := call(m.Name, map[string]any{"x": 1}); !invalid(e) {
					t.Errorf("params by name: %v", e)
				}
			}
		})
	}
}

// TestDiscoverDescribesEveryMethod checks that each demo method says in
// rpc.discover what it does, and what each of its params is.
func TestDiscoverDescribesEveryMethod(t *testing.T) {
	var resp struct {
		Result struct {
			Methods []struct {
				Name    string `json:"name"`
				Summary string `json:"summary"`
				Params  []struct {
					Name        string `json:"name"`
					Description string `json:"description"`
				} `json:"params"`
			} `json:"methods"`
		} `json:"result"`
	}
	opts := &peer.Options{Router: demo.Mux()}
	if err := json.Unmarshal(peer.Respond(t.Context(), []byte(`{"jsonrpc":"2.0","method":"rpc.discover","id":0}`), opts), &resp); err != nil {
		t.Fatal(err)
	}
	if len(resp.Result.Methods) == 0 {
		t.Fatal("rpc.discover lists no methods")
	}
	for _, m := range resp.Result.Methods {
		if m.Summary == "" {
			t.Errorf("%s has no summary", m.Name)
		}
		for _, p := range m.Params {
			if p.Description == "" {
				t.Errorf("%s: param %s has no description", m.Name, p.Name)
			}
		}
	}
}
