// Package testclient dials a hub with the Go client, for tests: a client
// that reconnects quickly, closed when the test ends, whose state changes
// the test can wait on.
package testclient

import (
	"context"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/client"
)

// Dial dials url with a client that reconnects quickly (opts, if given,
// replaces the defaults), closed when the test ends. Every change of its
// state goes to the returned channel (buffered; changes beyond its room
// are not reported).
func Dial(t testing.TB, url string, opts *client.Options) (*client.Client, <-chan client.State) {
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
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, url, &o)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, states
}

// WaitState waits for the client to reach state s, for up to 30 s.
func WaitState(t testing.TB, states <-chan client.State, s client.State) {
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

// URL is the WebSocket endpoint of a hub, or of a proxy in front of it, at
// host:port addr.
func URL(addr string) string { return "ws://" + addr + "/rpc" }
