package streams_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/client"
	"github.com/switchboard-rpc/switchboard/integration/internal/hubproc"
	"github.com/switchboard-rpc/switchboard/integration/internal/netcut"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	code := m.Run()
	hubproc.Cleanup()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "streams: leaked goroutines:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// startHub starts a demo hub whose collector runs often (GOGC=20), so
// that its heap in use follows what it holds.
func startHub(t *testing.T, args ...string) *hubproc.Hub {
	t.Helper()
	return hubproc.Start(t, &hubproc.Options{
		Args: append([]string{"-demo", "-log-level", "warn"}, args...),
		Env:  []string{"GOGC=20"},
	})
}

// proxy puts a TCP proxy in front of the hub, closed when the test ends.
func proxy(t *testing.T, h *hubproc.Hub) *netcut.Proxy {
	t.Helper()
	p, err := netcut.New(h.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// connect dials url with a client that reconnects quickly, closed when
// the test ends. Every change of its state goes to the returned channel
// (buffered; changes beyond its room are not reported).
func connect(t *testing.T, url string, opts *client.Options) (*client.Client, <-chan client.State) {
	t.Helper()
	states := make(chan client.State, 64)
	o := client.Options{MinBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond}
	if opts != nil {
		o = *opts
	}
	o.OnState = func(s client.State, _ error) {
		select {
		case states <- s:
		default:
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, url, &o)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, states
}

func wsURL(addr string) string { return "ws://" + addr + "/rpc" }

// waitState waits for the client to reach state s, for up to 30 s.
func waitState(t *testing.T, states <-chan client.State, s client.State) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case got := <-states:
			if got == s {
				return
			}
		case <-deadline:
			t.Fatalf("client not %v within 30s", s)
		}
	}
}
