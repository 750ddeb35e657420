package peer

import "testing"

// TestKeyIs pins keyIs, which tells the system methods the reader
// handles itself from all others by the raw JSON of the method name,
// escaped or not.
func TestKeyIs(t *testing.T) {
	tests := []struct {
		key  string
		want bool
	}{
		{`"rpc.cancel"`, true},
		{`"rpc\u002ecancel"`, true},
		{`"\u0072\u0070\u0063\u002e\u0063\u0061\u006e\u0063\u0065\u006c"`, true},
		{`"rpc.cancel2"`, false},
		{`"rpc.cancen"`, false},
		{`"rpc\u002ecancen"`, false},
		{`"echo"`, false},
		{`""`, false},
		{`"rpc\/cancel"`, false},
	}
	for _, tt := range tests {
		if got := keyIs([]byte(tt.key), "rpc.cancel"); got != tt.want {
			t.Errorf("keyIs(%s, rpc.cancel) = %v, want %v", tt.key, got, tt.want)
		}
	}
}

// TestParseKeys pins the decoding of a message's member names, which
// plainKey takes without a scan when they are spelt plainly: escaped
// spellings mean the same, and names that only begin like a member's
// are no member at all.
func TestParseKeys(t *testing.T) {
	tests := []struct {
		in                         string
		method, params, id, result string
		errObj                     string
		version, hasID             bool
	}{
		{in: `{"jsonrpc":"2.0","method":"m","params":[1],"id":7}`,
			method: `"m"`, params: `[1]`, id: `7`, version: true, hasID: true},
		{in: `{"\u006asonrpc":"2.0","m\u0065thod":"m","p\u0061rams":[1],"i\u0064":7}`,
			method: `"m"`, params: `[1]`, id: `7`, version: true, hasID: true},
		{in: `{ "jsonrpc" : "2.0" , "method" : "m" , "id" : 7 }`,
			method: `"m"`, id: `7`, version: true, hasID: true},
		{in: `{"jsonrpc":"2.0","method":"m","ids":7,"idx":8,"i":9,"paramsx":[2],"param":[3],"methods":"x","jsonrpc2":"1.0"}`,
			method: `"m"`, version: true},
		{in: `{"jsonrpc":"2.0","result":{"a":1},"id":"x"}`,
			result: `{"a":1}`, id: `"x"`, version: true, hasID: true},
		{in: `{"jsonrpc":"2.0","error":{"code":1,"message":"no"},"id":null}`,
			errObj: `{"code":1,"message":"no"}`, id: `null`, version: true, hasID: true},
		{in: `{"jsonrpc":"2.0","results":1,"errors":2,"resul":3,"erro":4}`,
			version: true},
		{in: `{"jsonrpc":"1.0","method":"m"}`, method: `"m"`},
	}
	for _, tt := range tests {
		f, ok := parseFrame(nil, []byte(tt.in), 10, DefaultMaxDepth)
		if !ok || len(f.msgs) != 1 {
			t.Fatalf("parseFrame(%s): ok %v, %d messages", tt.in, ok, len(f.msgs))
		}
		m := &f.msgs[0]
		got := []string{string(m.method), string(m.params), string(m.id), string(m.result), string(m.err)}
		want := []string{tt.method, tt.params, tt.id, tt.result, tt.errObj}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("parseFrame(%s): member %d is %q, want %q", tt.in, i, got[i], want[i])
			}
		}
		if m.version != tt.version || m.hasID != tt.hasID {
			t.Errorf("parseFrame(%s): version %v, hasID %v; want %v, %v", tt.in, m.version, m.hasID, tt.version, tt.hasID)
		}
	}
}
