package client

import (
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/switchboard-rpc/switchboard/hub"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/server"
	"go.uber.org/zap/zaptest"
)

// relay is a hub.Broker that forwards nothing: a test tells its hub that
// events from other nodes were lost.
type relay struct{ h *hub.BrokerHandle }

func (r *relay) Register(h *hub.BrokerHandle) { r.h = h }
func (r *relay) Node() string                 { return "n1" }
func (r *relay) Forward(string, []byte)       {}
func (r *relay) Stats() hub.BrokerStats       { return hub.BrokerStats{Connected: true} }

// TestMissedResumesWithoutReconnecting: told by rpc.missed that events of
// a topic were lost, the client resumes the subscriptions of that pattern
// on the same connection: their handlers get a Missed event, then every
// later event once and in order; the subscriptions of other patterns
// see nothing of it, and the connection stays.
func TestMissedResumesWithoutReconnecting(t *testing.T) {
	r := &relay{}
	h := hub.New(&hub.Options{Policy: hub.AllowAll, Broker: r})
	ts := httptest.NewServer(server.New(&server.Options{Hub: h, Logger: zaptest.NewLogger(t)}))
	defer ts.Close()
	states := newStateLog()
	c := dial(t, "ws"+strings.TrimPrefix(ts.URL, "http")+"/rpc", &Options{OnState: states.on})

	lost, kept := make(chan Event, 100), make(chan Event, 100)
	if _, err := c.Subscribe(ctx(t), "m.lost", func(ev Event) { lost <- ev }); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Subscribe(ctx(t), "m.kept", func(ev Event) { kept <- ev }); err != nil {
		t.Fatal(err)
	}
	publish := func(topic string, i int) {
		t.Helper()
		if _, err := h.Publish(ctx(t), topic, i); err != nil {
			t.Fatal(err)
		}
	}
	publish("m.lost", 0)
	if ev := testkit.Recv(t, lost, "event 0"); string(ev.Data) != "0" {
		t.Fatalf("got %+v", ev)
	}
	if n := r.h.MissedTopics([]string{"m.lost"}); n != 1 {
		t.Fatalf("told %d peers, want 1", n)
	}
	const n = 50
	for i := 1; i <= n; i++ {
		publish("m.lost", i)
		publish("m.kept", i)
	}
	var got []string
	for i := 0; i <= n; i++ {
		ev := testkit.Recv(t, lost, "m.lost")
		if ev.Missed {
			got = append(got, "missed")
			continue
		}
		got = append(got, string(ev.Data))
	}
	want := []string{"missed"}
	for i := 1; i <= n; i++ {
		want = append(want, fmt.Sprint(i))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("m.lost got %v, want %v", got, want)
	}
	for i := 1; i <= n; i++ {
		if ev := testkit.Recv(t, kept, "m.kept"); ev.Missed || string(ev.Data) != fmt.Sprint(i) {
			t.Fatalf("m.kept event %d: %+v", i, ev)
		}
	}
	// Nothing more: a marker published last arrives next.
	publish("m.lost", -1)
	if ev := testkit.Recv(t, lost, "marker"); string(ev.Data) != "-1" {
		t.Fatalf("after the events: %+v", ev)
	}
	states.mu.Lock()
	defer states.mu.Unlock()
	if !slices.Equal(states.all, []State{StateConnecting, StateConnected}) {
		t.Fatalf("states %v: the connection did not stay", states.all)
	}
}
