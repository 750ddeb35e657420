package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/client"
	"github.com/switchboard-rpc/switchboard/internal/hubtest"
	"github.com/switchboard-rpc/switchboard/peer"
)

// rpc whoami prints a connection's id; rpc call -peer, -user and -topic
// call peers through the hub, one result or one line per peer.
func TestCallPeers(t *testing.T) {
	h := hubtest.Start(t, nil)
	var ids []string
	for i := range 2 {
		mux := peer.NewMux()
		mux.Handle("draft", peer.Func(func(_ context.Context, p []int) (string, error) {
			if i == 1 {
				return "", &peer.Error{Code: 4001, Message: "no draft"}
			}
			return fmt.Sprintf("draft %d of %d", i, p[0]), nil
		}))
		c, err := client.Dial(t.Context(), h.WS(), &client.Options{Router: mux})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Subscribe(t.Context(), "room.7", func(client.Event) {}); err != nil {
			t.Fatal(err)
		}
		me, err := c.WhoAmI(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, me.ID)
	}

	r := rpc(t, "", "whoami", h.WS())
	if r.code != 0 || !strings.HasPrefix(r.stdout, `{"id":"`) {
		t.Fatalf("whoami: %+v", r)
	}
	rpc(t, "", "call", "-peer", ids[0], h.HTTP(), "draft", "5").check(t, 0, `"draft 0 of 5"`+"\n")
	r = rpc(t, "", "call", "-peer", ids[1], h.WS(), "draft", "5")
	if r.code != 1 || !strings.Contains(r.stderr, "no draft") {
		t.Fatalf("an error of the peer: %+v", r)
	}
	r = rpc(t, "", "call", "-peer", "nobody", h.HTTP(), "draft", "5")
	if r.code != 1 || !strings.Contains(r.stderr, "-32007") {
		t.Fatalf("no such peer: %+v", r)
	}
	r = rpc(t, "", "call", "--topic", "room.7", h.HTTP(), "draft", "5")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	sort.Strings(lines)
	want := []string{
		`{"peer":{"id":"` + ids[0] + `"},"result":"draft 0 of 5"}`,
		`{"peer":{"id":"` + ids[1] + `"},"error":{"code":4001,"message":"no draft"}}`,
	}
	sort.Strings(want)
	if r.code != 1 || strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("-topic: exit %d\n%s\nwant\n%s", r.code, r.stdout, strings.Join(want, "\n"))
	}
	rpc(t, "", "call", "-user", "nobody", h.HTTP(), "draft", "5").check(t, 0, "")
	r = rpc(t, "", "call", "-user", "a", "-topic", "b", h.HTTP(), "draft")
	if r.code != 2 {
		t.Fatalf("two addresses: %+v", r)
	}
}

// rpc serve prints the id it is addressed by, and with -subscribe is
// among a topic's peers: rpc call -peer and -topic reach it.
func TestServeAddressed(t *testing.T) {
	h := hubtest.Start(t, nil)
	_, _, lines := start(t, "serve", "-subscribe", "room.7", h.WS(), "draft=echo my draft")
	var id string
	deadline := time.After(wait)
	for id == "" {
		select {
		case l := <-lines:
			if _, after, ok := strings.Cut(l, "rpc: serving draft as peer "); ok {
				id = after
			}
		case <-deadline:
			t.Fatal("no peer id printed")
		}
	}
	rpc(t, "", "call", "-peer", id, h.HTTP(), "draft").check(t, 0, `"my draft"`+"\n")
	rpc(t, "", "call", "-topic", "room.7", h.HTTP(), "draft").check(t, 0, `{"peer":{"id":"`+id+`"},"result":"my draft"}`+"\n")
}

// When the peers' answers do not all fit in one message of the hub's, rpc
// call -topic prints those that came and says on stderr how many did not.
func TestCallPeersTruncated(t *testing.T) {
	const peers = 12 // 12 x 100 KB: over the hub's 1 MiB
	h := hubtest.Start(t, nil)
	big := strings.Repeat("x", 100_000)
	for range peers {
		mux := peer.NewMux()
		mux.HandleFunc("big", func(context.Context, *peer.Request) (any, error) { return big, nil })
		c, err := client.Dial(t.Context(), h.WS(), &client.Options{Router: mux})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Subscribe(t.Context(), "room.big", func(client.Event) {}); err != nil {
			t.Fatal(err)
		}
	}
	r := rpc(t, "", "call", "-topic", "room.big", h.HTTP(), "big")
	lines := strings.Count(r.stdout, "\n")
	if r.code != 0 || lines == 0 || lines >= peers ||
		!strings.Contains(r.stderr, fmt.Sprintf("%d of %d peers' answers left out", peers-lines, peers)) {
		t.Fatalf("exit %d, %d lines, stderr %q", r.code, lines, r.stderr)
	}
}
