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
