package client

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/internal/hubtest"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/server"
)

var testSecret = []byte("a test secret of at least thirty-two bytes")

func jwtHub(t *testing.T) *hubtest.Hub {
	t.Helper()
	j, err := server.NewJWT(t.Context(), &server.JWTOptions{Key: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	return hubtest.Start(t, &hubtest.Options{Server: server.Options{Authenticate: j.Authenticate, Reauthenticate: j.Verify}})
}

func signed(t *testing.T, sub string, ttl time.Duration) string {
	return testkit.HS256(t, testSecret, sub, ttl, nil)
}

// TestTokenRefresh: the client replaces a token that expires in a few
// seconds with rpc.auth, again and again, and the hub never closes it.
func TestTokenRefresh(t *testing.T) {
	h := jwtHub(t)
	calls := make(chan int, 10)
	var n atomic.Int32
	states := newStateLog()
	var disconnects atomic.Int32
	c := dial(t, h.WS(), &Options{
		TokenFunc: func(context.Context) (string, error) {
			calls <- int(n.Add(1))
			return signed(t, "alice", 3*time.Second), nil
		},
		OnState: func(s State, err error) {
			if s == StateDisconnected || err != nil {
				disconnects.Add(1)
			}
			states.on(s, err)
		},
	})
	// The first token expires within 3 s; the third call comes after that.
	for want := 1; want <= 3; want++ {
		if got := testkit.Recv(t, calls, fmt.Sprintf("token call %d", want)); got != want {
			t.Fatalf("token call %d, want %d", got, want)
		}
	}
	if err := c.Call(ctx(t), "echo", []int{1}, nil); err != nil {
		t.Fatal(err)
	}
	if d := disconnects.Load(); d != 0 {
		t.Errorf("%d disconnections or errors while refreshing", d)
	}
	if p := h.Hub().Peers(); len(p) != 1 || fmt.Sprint(p[0].Identity()) != "alice" {
		t.Errorf("peers %v", p)
	}
}

// TestTokenRefreshRefused: a refresh the hub refuses is reported to
// OnState, and the connection carries on while the old token holds.
func TestTokenRefreshRefused(t *testing.T) {
	h := jwtHub(t)
	var n atomic.Int32
	refused := make(chan error, 10)
	c := dial(t, h.WS(), &Options{
		TokenFunc: func(context.Context) (string, error) {
			if n.Add(1) == 1 {
				return signed(t, "alice", 3*time.Second), nil
			}
			return signed(t, "mallory", time.Hour), nil // another user: refused
		},
		OnState: func(s State, err error) {
			if s == StateConnected && err != nil {
				refused <- err
			}
		},
	})
	err := testkit.Recv(t, refused, "refused refresh")
	if !errors.Is(err, ErrTokenRefused) {
		t.Fatalf("OnState error %v, want ErrTokenRefused", err)
	}
	if err := c.Call(ctx(t), "echo", []int{1}, nil); err != nil {
		t.Errorf("call after a refused refresh: %v", err)
	}
}

func TestTokenExpiry(t *testing.T) {
	if got := tokenExpiry(signed(t, "a", time.Hour)); time.Until(got) < 59*time.Minute {
		t.Errorf("tokenExpiry = %v", got)
	}
	for _, tok := range []string{"", "opaque", "a.b.c", "a." + "eyJzdWIiOiJhIn0" + ".c"} {
		if got := tokenExpiry(tok); !got.IsZero() {
			t.Errorf("tokenExpiry(%q) = %v", tok, got)
		}
	}
}
