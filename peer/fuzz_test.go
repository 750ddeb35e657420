package peer

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
)

func addSeeds(f *testing.F) {
	for _, tt := range specCases {
		f.Add([]byte(tt.in))
	}
	f.Add([]byte(`{"jsonrpc":"2.0","method":"echo","params":[1,{"a":[true,false,null]}],"id":18446744073709551616}`))
	f.Add([]byte(`[{"jsonrpc":"2.0","result":1,"id":1},{"jsonrpc":"2.0","method":"rpc.cancel","params":{"id":1}}]`))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"rpc.progress","params":{"id":1,"data":2}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"echo","params":["\ud800"],"id":"\u00ff"}`))
}

// checkReply asserts that a reply is well-formed JSON-RPC: one response
// object, or a non-empty array of them.
func checkReply(t *testing.T, in, out []byte) {
	if out == nil {
		return
	}
	if !json.Valid(out) {
		t.Fatalf("invalid JSON reply %q to %q", out, in)
	}
	var resps []map[string]json.RawMessage
	if bytes.HasPrefix(out, []byte("[")) {
		if err := json.Unmarshal(out, &resps); err != nil || len(resps) == 0 {
			t.Fatalf("bad batch reply %q to %q", out, in)
		}
	} else {
		var r map[string]json.RawMessage
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("bad reply %q to %q", out, in)
		}
		resps = append(resps, r)
	}
	for _, r := range resps {
		_, hasResult := r["result"]
		_, hasError := r["error"]
		if string(r["jsonrpc"]) != `"2.0"` || hasResult == hasError || r["id"] == nil {
			t.Fatalf("bad response %q to %q", out, in)
		}
	}
	// A single valid call is answered with its id, byte for byte.
	f, ok := parseFrame(nil, in, 1000, DefaultMaxDepth)
	if ok && !f.batch && f.msgs[0].validRequest() && f.msgs[0].hasID && !bytes.HasPrefix(out, []byte("[")) {
		if got := string(resps[0]["id"]); got != string(f.msgs[0].id) {
			t.Fatalf("id %s echoed as %s", f.msgs[0].id, got)
		}
	}
}

// FuzzRespond feeds arbitrary bodies to the connection-less server: it
// must never panic and must always answer well-formed JSON-RPC.
func FuzzRespond(f *testing.F) {
	addSeeds(f)
	opts := &Options{Router: specMux(), MaxBatch: 50}
	f.Fuzz(func(t *testing.T, in []byte) {
		checkReply(t, in, Respond(context.Background(), in, opts))
		// The scanner agrees with encoding/json on validity.
		if validJSON(in) != json.Valid(in) {
			t.Fatalf("validJSON(%q) = %v, json.Valid = %v", in, validJSON(in), json.Valid(in))
		}
	})
}

// FuzzConn feeds arbitrary messages to a connection: it must never panic,
// answer well-formed JSON-RPC, and keep serving.
func FuzzConn(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		p := newRawPeer(t, &Options{Router: specMux(), MaxBatch: 50})
		out := p.roundTrip(string(in))
		if out != "" {
			checkReply(t, in, []byte(out))
		}
	})
}
