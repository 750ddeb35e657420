// Package demo holds the demo methods the hub serves with -demo: the
// examples of the JSON-RPC 2.0 specification, verbatim, and a few more that
// show what a symmetric connection can do (progress, cancellation, calls
// from the server to the client). Tests of the server and of clients
// reuse them.
package demo

import (
	"context"
	"encoding/json"
	"time"

	"github.com/switchboard-rpc/switchboard/peer"
)

// MaxSleep bounds the sleep method.
const MaxSleep = 10 * time.Minute

// Mux returns a new Mux serving the demo methods.
func Mux() *peer.Mux {
	m := peer.NewMux()
	Register(m)
	return m
}

// Register adds the demo methods to m.
func Register(m *peer.Mux) {
	m.Handle("subtract", peer.Func(subtract))
	m.Handle("sum", peer.Func(sum))
	m.Handle("get_data", peer.Func(getData))
	for _, name := range []string{"update", "notify_hello", "notify_sum"} {
		m.Handle(name, peer.Func(accept))
	}
	m.Handle("echo", peer.Func(echo))
	m.Handle("add", peer.Func(add))
	m.Handle("sleep", peer.Func(sleep))
	m.Handle("callback", peer.Func(callback))
	for name, doc := range docs {
		m.Describe(name, doc)
	}
}

// docs describes the demo methods in rpc.discover, so that a tool like
// the playground can say what each one does.
var docs = map[string]peer.Doc{
	"subtract": {Summary: "Subtracts subtrahend from minuend: [42, 23] or {\"minuend\": 42, \"subtrahend\": 23}.",
		Params: map[string]string{"minuend": "the number to subtract from", "subtrahend": "the number subtracted"}},
	"sum":          {Summary: "Adds any count of numbers: [1, 2, 4].", Params: map[string]string{"params": "the numbers, by position"}},
	"get_data":     {Summary: "Returns [\"hello\", 5], as in the specification's batch example.", Params: map[string]string{"params": "ignored"}},
	"update":       {Summary: "Takes anything and does nothing: the specification sends it as a notification.", Params: map[string]string{"params": "ignored"}},
	"notify_hello": {Summary: "Takes anything and does nothing: the specification sends it as a notification.", Params: map[string]string{"params": "ignored"}},
	"notify_sum":   {Summary: "Takes anything and does nothing: the specification sends it as a notification.", Params: map[string]string{"params": "ignored"}},
	"echo":         {Summary: "Returns its params unchanged, big numbers and all.", Params: map[string]string{"params": "anything, returned as sent"}},
	"add":          {Summary: "Adds two numbers: [1, 2] or {\"a\": 1, \"b\": 2}.", Params: map[string]string{"a": "the first number", "b": "the second number"}},
	"sleep": {Summary: "Waits ms milliseconds, sending rpc.progress about every 100 ms; rpc.cancel ends it with -32002.",
		Params: map[string]string{"ms": "how long to wait, in milliseconds (at most ten minutes)"}},
	"callback": {Summary: "Calls method on the calling peer, over the same connection, and returns that call's result or error.",
		Params: map[string]string{"method": "the method the hub calls on you", "params": "its params, passed on unchanged"}},
}

// SubtractParams are the params of subtract, by position or by name.
type SubtractParams struct {
	Minuend    float64 `json:"minuend"`
	Subtrahend float64 `json:"subtrahend"`
}

func subtract(_ context.Context, p SubtractParams) (float64, error) {
	return p.Minuend - p.Subtrahend, nil
}

func sum(_ context.Context, nums []float64) (float64, error) {
	var s float64
	for _, n := range nums {
		s += n
	}
	return s, nil
}

func getData(context.Context, json.RawMessage) ([]any, error) {
	return []any{"hello", 5}, nil
}

// accept takes any params and does nothing: update, notify_hello and
// notify_sum, which the specification sends as notifications.
func accept(context.Context, json.RawMessage) (any, error) { return nil, nil }

func echo(_ context.Context, p json.RawMessage) (json.RawMessage, error) {
	if len(p) == 0 {
		return json.RawMessage("null"), nil
	}
	return p, nil
}

// AddParams are the params of add: [a, b] or {"a": a, "b": b}.
type AddParams struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

func add(_ context.Context, p AddParams) (float64, error) { return p.A + p.B, nil }

// SleepParams are the params of sleep.
type SleepParams struct {
	MS int64 `json:"ms"`
}

// SleepResult is the result of sleep, and the data of its progress
// notifications (the time slept so far).
type SleepResult struct {
	Slept int64 `json:"slept"`
}

// sleep waits p.MS milliseconds, reporting progress about every 100ms.
// Cancelled, it returns the context's error: -32002 (or -32003 on a
// deadline).
func sleep(ctx context.Context, p SleepParams) (SleepResult, error) {
	d := time.Duration(p.MS) * time.Millisecond
	if p.MS < 0 || d > MaxSleep {
		return SleepResult{}, peer.Errorf(peer.CodeInvalidParams, "Invalid params: ms must be between 0 and %d", MaxSleep.Milliseconds())
	}
	start := time.Now()
	timer := time.NewTimer(d)
	defer timer.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-timer.C:
			return SleepResult{p.MS}, nil
		case <-tick.C:
			_ = peer.Progress(ctx, SleepResult{time.Since(start).Milliseconds()})
		case <-ctx.Done():
			return SleepResult{}, ctx.Err()
		}
	}
}

// CallbackParams are the params of callback.
type CallbackParams struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// callback calls p.Method on the calling peer and returns its result;
// the peer's error, a *peer.Error, passes through unchanged.
func callback(ctx context.Context, p CallbackParams) (json.RawMessage, error) {
	conn := peer.ConnFromContext(ctx)
	if conn == nil {
		return nil, peer.Errorf(peer.CodeApplication, "callback needs a WebSocket connection: over HTTP POST there is no peer to call back")
	}
	if p.Method == "" {
		return nil, peer.Errorf(peer.CodeInvalidParams, "Invalid params: callback needs a method")
	}
	var params any
	if len(p.Params) > 0 && string(p.Params) != "null" {
		params = p.Params
	}
	var result json.RawMessage
	if err := conn.Call(ctx, p.Method, params, &result); err != nil {
		return nil, err
	}
	return result, nil
}
