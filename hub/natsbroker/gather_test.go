package natsbroker_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/hub/natsbroker"
	"github.com/switchboard-rpc/switchboard/peer"
)

// startQuietNode is startRouteNode with a heartbeat of a second: these
// tests lose no node, and a node taken for gone under load (three of the
// 50 ms heartbeats late) would fail them for nothing.
func startQuietNode(t *testing.T, url, name string, maxMessage int) *node {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	b, err := natsbroker.Connect(ctx, &natsbroker.Options{URLs: url, Node: name, Heartbeat: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	h := hub.New(&hub.Options{Policy: hub.AllowAll, MaxMessage: maxMessage, Broker: b.HubBroker()})
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return &node{h, b}
}

// answering returns a mux whose "state" answers a string of n bytes.
func answering(n int) *peer.Mux {
	s := strings.Repeat("x", n)
	m := peer.NewMux()
	m.HandleFunc("state", func(context.Context, *peer.Request) (any, error) { return s, nil })
	return m
}

// An rpc.call of a topic whose peers are on another node keeps within the
// message size limit as one of this node's: the answer is truncated, and
// a result that could never fit is not even sent over NATS.
func TestAddressTruncatedAcrossNodes(t *testing.T) {
	const limit = 64 << 10
	url := startNATS(t)
	a, b := startQuietNode(t, url, "a", limit), startQuietNode(t, url, "b", limit)
	caller, _ := attach(t, a, &peer.Options{}, "alice", nil)
	const peers = 20 // 20 x 8 KiB: two and a half times the limit
	for range peers {
		c, _ := attach(t, b, &peer.Options{}, "bob", answering(8<<10))
		if err := c.Call(t.Context(), "rpc.subscribe", []string{"room.big"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	huge, _ := attach(t, b, &peer.Options{}, "bob", answering(100<<10)) // over the limit by itself
	if err := huge.Call(t.Context(), "rpc.subscribe", []string{"room.huge"}, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	eventually(t, a, "a to know b", func() bool { return len(a.b.Members()) == 1 })
	eventuallyPresent(t, a, "room.big", peers)
	eventuallyPresent(t, a, "room.huge", 1)

	type answer struct {
		Results []struct {
			Peer   hub.PeerInfo
			Result json.RawMessage
			Error  *peer.Error
		}
		Truncated bool
		Asked     int
	}
	var raw json.RawMessage
	if err := caller.Call(ctx, "rpc.call", map[string]any{"topic": "room.big", "method": "state"}, &raw); err != nil {
		t.Fatal(err)
	}
	var got answer
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if len(raw) > limit || !got.Truncated || got.Asked != peers || len(got.Results) == 0 || len(got.Results) >= peers {
		t.Fatalf("answer of %d bytes: %d entries, truncated %v, asked %d: %.300s", len(raw), len(got.Results), got.Truncated, got.Asked, raw)
	}
	for _, r := range got.Results {
		if r.Peer.Node != "b" || len(r.Result) != 8<<10+2 {
			t.Fatalf("entry from %+v of %d bytes, error %v", r.Peer, len(r.Result), r.Error)
		}
	}

	in := a.b.Conn().Stats().InBytes
	if err := caller.Call(ctx, "rpc.call", map[string]any{"topic": "room.huge", "method": "state"}, &raw); err != nil {
		t.Fatal(err)
	}
	if string(raw) != `{"results":[],"truncated":true,"asked":1}` {
		t.Fatalf("a result that cannot fit: %s", raw)
	}
	if got := a.b.Conn().Stats().InBytes - in; got >= 100<<10 {
		t.Fatalf("a received %d bytes over NATS for a result it left out", got)
	}
}

// A peer's answer larger than NATS carries (1 MB by default) comes back
// as an error saying so, at once, rather than as a timeout.
func TestAnswerOverNATSPayload(t *testing.T) {
	url := startNATS(t)
	a, b := startQuietNode(t, url, "a", 0), startQuietNode(t, url, "b", 0)
	caller, _ := attach(t, a, &peer.Options{}, "alice", nil)
	_, p := attach(t, b, &peer.Options{MaxMessage: 4 << 20}, "bob", answering(2<<20))
	eventually(t, a, "a to know b", func() bool { return len(a.b.Members()) == 1 })
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	err := caller.Call(ctx, "rpc.call", map[string]any{"peer": p.ID(), "method": "state"}, nil)
	wantCode(t, err, peer.CodeInternalError)
	if !strings.Contains(err.Error(), "over what the cluster carries") {
		t.Fatalf("error %v", err)
	}
}
