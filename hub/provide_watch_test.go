package hub_test

import (
	"context"
	"slices"
	"testing"

	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

// TestWatchProvided: a watcher hears each provide, withdraw and leave,
// ProvidedNames follows them, and once stopped it hears nothing more.
func TestWatchProvided(t *testing.T) {
	rh := startHub(t, nil)
	changes := make(chan struct{}, 16)
	stop := rh.h.WatchProvided(func() { changes <- struct{}{} })
	defer stop()

	c := rh.dial(t, nil)
	provide(t, c, "page.title", "page.*")
	testkit.Recv(t, changes, "a change on rpc.provide")
	if got := rh.h.ProvidedNames(); !slices.Equal(got, []string{"page.*", "page.title"}) {
		t.Errorf("ProvidedNames = %q", got)
	}
	if err := c.Call(context.Background(), "rpc.unprovide", []string{"page.title"}, nil); err != nil {
		t.Fatal(err)
	}
	testkit.Recv(t, changes, "a change on rpc.unprovide")
	if got := rh.h.ProvidedNames(); !slices.Equal(got, []string{"page.*"}) {
		t.Errorf("ProvidedNames = %q once withdrawn", got)
	}
	c.Close()
	testkit.Recv(t, changes, "a change when the provider leaves")
	if got := rh.h.ProvidedNames(); len(got) != 0 {
		t.Errorf("ProvidedNames = %q once the provider left", got)
	}

	stop()
	c2 := rh.dial(t, nil)
	provide(t, c2, "other.method")
	// rpc.provide returned: its change was told, to no one now.
	select {
	case <-changes:
		t.Error("a stopped watcher was called")
	default:
	}
}
