package peer

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

// specCases are the examples of the JSON-RPC 2.0 specification, verbatim,
// then the edge cases docs/protocol.md adds. want "" means no reply.
var specCases = []struct{ name, in, want string }{
	// Examples from the specification.
	{"positional params", `{"jsonrpc": "2.0", "method": "subtract", "params": [42, 23], "id": 1}`,
		`{"jsonrpc": "2.0", "result": 19, "id": 1}`},
	{"positional params reversed", `{"jsonrpc": "2.0", "method": "subtract", "params": [23, 42], "id": 2}`,
		`{"jsonrpc": "2.0", "result": -19, "id": 2}`},
	{"named params", `{"jsonrpc": "2.0", "method": "subtract", "params": {"subtrahend": 23, "minuend": 42}, "id": 3}`,
		`{"jsonrpc": "2.0", "result": 19, "id": 3}`},
	{"named params reordered", `{"jsonrpc": "2.0", "method": "subtract", "params": {"minuend": 42, "subtrahend": 23}, "id": 4}`,
		`{"jsonrpc": "2.0", "result": 19, "id": 4}`},
	{"notification", `{"jsonrpc": "2.0", "method": "update", "params": [1,2,3,4,5]}`, ``},
	{"notification without params", `{"jsonrpc": "2.0", "method": "foobar"}`, ``},
	{"non-existent method", `{"jsonrpc": "2.0", "method": "foobar", "id": "1"}`,
		`{"jsonrpc": "2.0", "error": {"code": -32601, "message": "Method not found"}, "id": "1"}`},
	{"invalid JSON", `{"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz]`,
		`{"jsonrpc": "2.0", "error": {"code": -32700, "message": "Parse error"}, "id": null}`},
	{"invalid request object", `{"jsonrpc": "2.0", "method": 1, "params": "bar"}`,
		`{"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null}`},
	{"batch, invalid JSON", `[
  {"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},
  {"jsonrpc": "2.0", "method"
]`, `{"jsonrpc": "2.0", "error": {"code": -32700, "message": "Parse error"}, "id": null}`},
	{"empty array", `[]`,
		`{"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null}`},
	{"invalid batch of one", `[1]`,
		`[{"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null}]`},
	{"invalid batch", `[1,2,3]`, `[
  {"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null},
  {"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null},
  {"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null}
]`},
	{"batch", `[
  {"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},
  {"jsonrpc": "2.0", "method": "notify_hello", "params": [7]},
  {"jsonrpc": "2.0", "method": "subtract", "params": [42,23], "id": "2"},
  {"foo": "boo"},
  {"jsonrpc": "2.0", "method": "foo.get", "params": {"name": "myself"}, "id": "5"},
  {"jsonrpc": "2.0", "method": "get_data", "id": "9"}
]`, `[
  {"jsonrpc": "2.0", "result": 7, "id": "1"},
  {"jsonrpc": "2.0", "result": 19, "id": "2"},
  {"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null},
  {"jsonrpc": "2.0", "error": {"code": -32601, "message": "Method not found"}, "id": "5"},
  {"jsonrpc": "2.0", "result": ["hello", 5], "id": "9"}
]`},
	{"batch of notifications", `[
  {"jsonrpc": "2.0", "method": "notify_sum", "params": [1,2,4]},
  {"jsonrpc": "2.0", "method": "notify_hello", "params": [7]}
]`, ``},

	// Ids of every kind, echoed byte for byte.
	{"id null is a call", `{"jsonrpc":"2.0","method":"add","params":[1,2],"id":null}`,
		`{"jsonrpc":"2.0","result":3,"id":null}`},
	{"id beyond 64 bits", `{"jsonrpc":"2.0","method":"add","params":[1,2],"id":123456789012345678901234567890}`,
		`{"jsonrpc":"2.0","result":3,"id":123456789012345678901234567890}`},
	{"id fractional", `{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1.50e3}`,
		`{"jsonrpc":"2.0","result":3,"id":1.50e3}`},
	{"id negative", `{"jsonrpc":"2.0","method":"add","params":[1,2],"id":-7}`,
		`{"jsonrpc":"2.0","result":3,"id":-7}`},
	{"id string with escapes", `{"jsonrpc":"2.0","method":"add","params":[1,2],"id":"a\"b\u00e9"}`,
		`{"jsonrpc":"2.0","result":3,"id":"a\"b\u00e9"}`},
	{"id true", `{"jsonrpc":"2.0","method":"add","params":[1,2],"id":true}`,
		`{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request"},"id":null}`},
	{"id object", `{"jsonrpc":"2.0","method":"add","params":[1,2],"id":{"a":1}}`,
		`{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request"},"id":null}`},
	{"id array", `{"jsonrpc":"2.0","method":"add","params":[1,2],"id":[1]}`,
		`{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request"},"id":null}`},

	// Invalid requests.
	{"missing jsonrpc", `{"method":"add","params":[1,2],"id":1}`,
		`{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request"},"id":1}`},
	{"wrong version", `{"jsonrpc":"1.0","method":"add","params":[1,2],"id":1}`,
		`{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request"},"id":1}`},
	{"params string", `{"jsonrpc":"2.0","method":"add","params":"x","id":1}`,
		`{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request"},"id":1}`},
	{"params null", `{"jsonrpc":"2.0","method":"add","params":null,"id":1}`,
		`{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request"},"id":1}`},
	{"params number", `{"jsonrpc":"2.0","method":"add","params":3,"id":1}`,
		`{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request"},"id":1}`},
	{"invalid without id", `{"foo":"boo"}`,
		`{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request"},"id":null}`},
	{"scalar message", `42`,
		`{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request"},"id":null}`},
	{"string message", `"hello"`,
		`{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request"},"id":null}`},
	{"trailing garbage", `{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1} x`,
		`{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"},"id":null}`},
	{"empty input", ``,
		`{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"},"id":null}`},
	{"escaped member names", `{"json\u0072pc":"2.0","m\u0065thod":"add","params":[1,2],"id":1}`,
		`{"jsonrpc":"2.0","result":3,"id":1}`},
	{"reserved name, unknown", `{"jsonrpc":"2.0","method":"rpc.nothing","id":1}`,
		`{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"},"id":1}`},
	{"invalid notification is not answered as a call", `{"jsonrpc":"2.0","method":"nope"}`, ``},

	// Params binding and handler outcomes.
	{"named params by json name", `{"jsonrpc":"2.0","method":"add","params":{"a":1,"b":2},"id":1}`,
		`{"jsonrpc":"2.0","result":3,"id":1}`},
	{"omitted params, required fields", `{"jsonrpc":"2.0","method":"add","id":1}`,
		`{"jsonrpc":"2.0","error":{"code":-32602,"message":"Invalid params","data":"missing param \"A\""},"id":1}`},
	{"too few positional params", `{"jsonrpc":"2.0","method":"add","params":[1],"id":1}`,
		`{"jsonrpc":"2.0","error":{"code":-32602,"message":"Invalid params","data":"missing param \"B\""},"id":1}`},
	{"missing named param", `{"jsonrpc":"2.0","method":"add","params":{"A":1},"id":1}`,
		`{"jsonrpc":"2.0","error":{"code":-32602,"message":"Invalid params","data":"missing param \"B\""},"id":1}`},
	{"unknown named param", `{"jsonrpc":"2.0","method":"add","params":{"A":1,"B":2,"C":3},"id":1}`,
		`{"jsonrpc":"2.0","error":{"code":-32602,"message":"Invalid params","data":"unknown param \"C\""},"id":1}`},
	{"too many positional params", `{"jsonrpc":"2.0","method":"add","params":[1,2,3],"id":1}`,
		`{"jsonrpc":"2.0","error":{"code":-32602,"message":"Invalid params","data":"too many params: got 3, want at most 2"},"id":1}`},
	{"wrong param type", `{"jsonrpc":"2.0","method":"sum","params":{"a":1},"id":1}`,
		`{"jsonrpc":"2.0","error":{"code":-32602,"message":"Invalid params","data":"params must be an array"},"id":1}`},
	{"echo keeps params", `{"jsonrpc":"2.0","method":"echo","params":{"x":[1,"2",{"y":null}]},"id":1}`,
		`{"jsonrpc":"2.0","result":{"x":[1,"2",{"y":null}]},"id":1}`},
	{"plain error", `{"jsonrpc":"2.0","method":"fail","id":1}`,
		`{"jsonrpc":"2.0","error":{"code":-32000,"message":"it failed"},"id":1}`},
	{"custom error with data", `{"jsonrpc":"2.0","method":"custom","id":1}`,
		`{"jsonrpc":"2.0","error":{"code":42,"message":"custom","data":{"x":1}},"id":1}`},
	{"panic", `{"jsonrpc":"2.0","method":"panic","id":1}`,
		`{"jsonrpc":"2.0","error":{"code":-32603,"message":"Internal error"},"id":1}`},
	{"invalid raw result", `{"jsonrpc":"2.0","method":"bad_raw","id":1}`,
		`{"jsonrpc":"2.0","error":{"code":-32603,"message":"handler returned invalid JSON"},"id":1}`},
	{"ping", `{"jsonrpc":"2.0","method":"rpc.ping","id":"p"}`,
		`{"jsonrpc":"2.0","result":{},"id":"p"}`},
	{"responses are never answered", `{"jsonrpc":"2.0","result":1,"id":99}`, ``},
	{"invalid responses are never answered", `{"jsonrpc":"2.0","error":"x"}`, ``},
}

func TestSpecRespond(t *testing.T) {
	opts := &Options{Router: specMux()}
	for _, tt := range specCases {
		t.Run(tt.name, func(t *testing.T) {
			got := Respond(t.Context(), []byte(tt.in), opts)
			testkit.JSONEqual(t, tt.want, string(got))
		})
	}
}

// Reply gives back what each call's reply holds: its result as sent, or
// its error with code, message and data; a body that is no single reply,
// an error of its own.
func TestReply(t *testing.T) {
	opts := &Options{Router: specMux()}
	for _, tt := range []struct{ name, in, result, err string }{
		{"result", `{"jsonrpc":"2.0","method":"echo","params":{"x":[1,"2",{"y":null}]},"id":1}`, `{"x":[1,"2",{"y":null}]}`, ""},
		{"string id", `{"jsonrpc":"2.0","method":"rpc.ping","id":"p"}`, `{}`, ""},
		{"error with data", `{"jsonrpc":"2.0","method":"custom","id":1}`, "", `{"code":42,"message":"custom","data":{"x":1}}`},
		{"unknown method", `{"jsonrpc":"2.0","method":"nope","id":1}`, "", `{"code":-32601,"message":"Method not found"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Reply(Respond(t.Context(), []byte(tt.in), opts))
			if tt.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				testkit.JSONEqual(t, tt.result, string(res))
				return
			}
			e, ok := err.(*Error)
			if !ok || res != nil {
				t.Fatalf("got %s, %v; want the error %s", res, err, tt.err)
			}
			b, _ := json.Marshal(e)
			testkit.JSONEqual(t, tt.err, string(b))
		})
	}
	for _, body := range []string{"", `[{"jsonrpc":"2.0","result":1,"id":1}]`, `{"jsonrpc":"2.0","method":"x","id":1}`, `{"jsonrpc":"2.0","result":1,"id":1`} {
		if _, err := Reply([]byte(body)); err == nil {
			t.Errorf("Reply(%q): no error", body)
		} else if _, isRPC := err.(*Error); isRPC {
			t.Errorf("Reply(%q): %v, a JSON-RPC error", body, err)
		}
	}
}

func TestSpecConn(t *testing.T) {
	p := newRawPeer(t, &Options{Router: specMux()})
	for _, tt := range specCases {
		t.Run(tt.name, func(t *testing.T) {
			testkit.JSONEqual(t, tt.want, p.roundTrip(tt.in))
		})
	}
}

func TestBatchLimit(t *testing.T) {
	opts := &Options{Router: specMux(), MaxBatch: 2}
	in := `[{"jsonrpc":"2.0","method":"add","id":1},{"jsonrpc":"2.0","method":"add","id":2},{"jsonrpc":"2.0","method":"add","id":3}]`
	want := `{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request"},"id":null}`
	testkit.JSONEqual(t, want, string(Respond(context.Background(), []byte(in), opts)))
	p := newRawPeer(t, opts)
	testkit.JSONEqual(t, want, p.roundTrip(in))
	// At the limit, it is served.
	in2 := `[{"jsonrpc":"2.0","method":"add","params":[1,1],"id":1},{"jsonrpc":"2.0","method":"add","params":[2,2],"id":2}]`
	testkit.JSONEqual(t, `[{"jsonrpc":"2.0","result":2,"id":1},{"jsonrpc":"2.0","result":4,"id":2}]`, p.roundTrip(in2))
}
