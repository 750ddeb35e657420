package server_test

import (
	"net/http"
	"net/netip"
	"testing"

	"github.com/coder/websocket"
	"github.com/switchboard-rpc/switchboard/server"
)

// TestTrustedProxies: behind a trusted proxy, MaxConnsPerAddr counts the
// client the forwarding headers name, not the proxy (which would cap the
// whole site); an address a client wrote into the header itself is not
// believed, and from an untrusted address the headers mean nothing.
func TestTrustedProxies(t *testing.T) {
	dial := func(t *testing.T, ts *testServer, h http.Header) (*websocket.Conn, int) {
		t.Helper()
		ws, resp, err := websocket.Dial(timeout(t), ts.wsURL(), &websocket.DialOptions{HTTPHeader: h})
		if err != nil {
			if resp == nil {
				t.Fatalf("dial: %v", err)
			}
			if ra := resp.Header.Get("Retry-After"); resp.StatusCode == http.StatusServiceUnavailable && ra != "1" {
				t.Errorf("503 with Retry-After %q, want 1", ra)
			}
			return nil, resp.StatusCode
		}
		t.Cleanup(func() { ws.CloseNow() })
		return ws, http.StatusSwitchingProtocols
	}
	xff := func(v string) http.Header { return http.Header{"X-Forwarded-For": {v}} }
	fwd := func(v string) http.Header { return http.Header{"Forwarded": {v}} }

	t.Run("trusted", func(t *testing.T) {
		ts := newTestServer(t, &server.Options{
			TrustedProxies:  []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
			MaxConnsPerAddr: 2,
		})
		for i, tt := range []struct {
			h    http.Header
			want int
		}{
			{xff("203.0.113.5"), 101},
			{fwd(`for=203.0.113.5;proto=https`), 101},
			{xff("203.0.113.5"), 503},               // a third from that client
			{xff("198.51.100.1, 203.0.113.5"), 503}, // what the client wrote first is not believed
			{fwd(`for="[2001:db8::1]:4711"`), 101},  // another client
			{xff("203.0.113.6, 127.0.0.1"), 101},    // the last hop is a trusted proxy too
			{xff("203.0.113.6"), 101},
			{xff("203.0.113.6"), 503},
		} {
			if _, got := dial(t, ts, tt.h); got != tt.want {
				t.Errorf("dial %d with %v: %d, want %d", i, tt.h, got, tt.want)
			}
		}
		if n := ts.srv.Stats().Refused["max_conns_per_addr"]; n != 3 {
			t.Errorf("refused max_conns_per_addr: %d, want 3", n)
		}
	})
	t.Run("untrusted", func(t *testing.T) {
		ts := newTestServer(t, &server.Options{
			TrustedProxies:  []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
			MaxConnsPerAddr: 1,
		})
		for range 3 { // the server caps only clients of trusted proxies
			if _, got := dial(t, ts, xff("203.0.113.5")); got != 101 {
				t.Fatalf("dial with a header from an untrusted address: %d", got)
			}
		}
	})
}
