package main

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/internal/hubtest"
	"github.com/switchboard-rpc/switchboard/server"
)

// rpc provide serves methods to the hub's other peers: rpc call reaches
// them through the hub, over WebSocket and POST.
func TestProvide(t *testing.T) {
	h := hubtest.Start(t, nil)
	_, _, lines := start(t, "provide", h.WS(), "text.upper=tr a-z A-Z",
		"text.*=echo $RPC_METHOD", "text.fail=echo no such text >&2; exit 2")
	waitLine(t, lines, "providing text.upper, text.*, text.fail")

	for _, url := range []string{h.WS(), h.HTTP()} {
		rpc(t, "", "call", url, "text.upper", "abc").check(t, 0, `["ABC"]`+"\n")
		rpc(t, "", "call", url, "text.lower").check(t, 0, `"text.lower"`+"\n")
		r := rpc(t, "", "call", url, "text.fail")
		r.check(t, exitRPCError, "")
		if r.stderr != "rpc: error -32000: no such text\n" {
			t.Errorf("stderr %q", r.stderr)
		}
	}
	if st := h.Hub().Stats().Routes; st.Providers != 1 || st.Forwarded["text.upper"] != 2 {
		t.Errorf("hub stats %+v", st)
	}
	// The provided methods are listed by the hub's rpc.discover.
	if r := rpc(t, "", "discover", h.HTTP()); !strings.Contains(r.stdout, "text.upper(") {
		t.Errorf("discover lacks text.upper:\n%s", r.stdout)
	}
}

func TestProvideRefused(t *testing.T) {
	h := hubtest.Start(t, nil)
	if r := rpc(t, "", "provide", h.WS(), "rpc.x=true"); r.code != exitUsage {
		t.Errorf("rpc.x: exit %d", r.code)
	}
	if r := rpc(t, "", "provide", h.HTTP(), "x=true"); r.code != exitUsage {
		t.Errorf("over POST: exit %d", r.code)
	}
	r := rpc(t, "", "provide", h.WS(), "a..b=true")
	r.check(t, exitRPCError, "")
	if !strings.Contains(r.stderr, "error -32602: Invalid params: invalid method name or pattern") {
		t.Errorf("stderr %q", r.stderr)
	}
	// A hub with the default policy, which lets no peer provide.
	srv := server.New(&server.Options{Hub: hub.New(nil)})
	ts := httptest.NewServer(srv)
	defer ts.Close()
	defer srv.Shutdown(context.Background()) //nolint:errcheck
	r = rpc(t, "", "provide", "ws"+strings.TrimPrefix(ts.URL, "http")+"/rpc", "x=true")
	r.check(t, exitRPCError, "")
	if !strings.Contains(r.stderr, `error -32001: Unauthorized: provide "x"`) {
		t.Errorf("stderr %q", r.stderr)
	}
}
