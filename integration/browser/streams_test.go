package browser_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/client"
	"github.com/switchboard-rpc/switchboard/peer"
)

// dial connects a Go client to the hub, closed when the test ends.
func dial(t *testing.T, url string) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestClientResumesAfterDrops drops the page's connection (from the page:
// the hub stays up, so the stream keeps its epoch) three times while a Go
// peer publishes, and checks that the page's subscriber saw every event
// exactly once, in order, with no MissedEvent, and so did the subscriber
// of an overlapping pattern.
func TestClientResumesAfterDrops(t *testing.T) {
	tb, h := openClientPage(t)
	const n = 300
	eval[bool](tb, `(async () => {
		window.sockets = [];
		class Tracked extends WebSocket {
			constructor(...args) { super(...args); sockets.push(this); }
		}
		window.got = [];
		window.opens = 0;
		const c = new sb.Client(hub, { WebSocket: Tracked, minBackoff: 10, maxBackoff: 50 });
		c.addEventListener("state", (e) => { if (e.state === "open") opens++; });
		window.c = c;
		let done;
		window.all = new Promise((r) => (done = r));
		await c.subscribe("feed.>", (ev) => {
			got.push(ev.missed ? "missed" : ev.data);
			// Drop the connection a few times while events keep coming.
			if (got.length % 75 === 0) sockets.at(-1).close();
			if (got.length === `+fmt.Sprint(n)+`) done();
		});
		// An overlapping pattern with a handler of its own.
		window.got0 = [];
		await c.subscribe("feed.t0", (ev) => got0.push(ev.missed ? "missed" : ev.data));
		return true;
	})()`)

	pub := dial(t, h.WebSocketURL())
	errc := make(chan error, 1)
	go func() {
		for i := range n {
			if _, err := pub.Publish(t.Context(), fmt.Sprintf("feed.t%d", i%3), i); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	got := eval[[]any](tb, `all.then(() => got)`)
	want := make([]any, n)
	for i := range want {
		want[i] = float64(i)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("the page got %d events: %v\nwant 0..%d once each, in order", len(got), got, n-1)
	}
	var want0 []any
	for i := 0; i < n; i += 3 {
		want0 = append(want0, float64(i))
	}
	// Its replays come after those of feed.>, on the same connection.
	got0 := eval[[]any](tb, `new Promise((r) => { const f = () => got0.length >= `+fmt.Sprint(len(want0))+` ? r(got0) : setTimeout(f, 5); f(); })`)
	if !reflect.DeepEqual(got0, want0) {
		t.Errorf("the subscriber of feed.t0 got %v\nwant %v", got0, want0)
	}
	if opens := eval[int](tb, `opens`); opens < 1+n/75-1 {
		t.Errorf("the client opened %d connections; the drops did not happen", opens)
	}
	// A late duplicate would show up after the last one: one more event,
	// and the page has exactly n+1.
	if _, err := pub.Publish(t.Context(), "feed.end", n); err != nil {
		t.Fatal(err)
	}
	if last := eval[float64](tb, `new Promise((r) => { const f = () => got.length > `+fmt.Sprint(n)+` ? r(got.at(-1)) : setTimeout(f, 5); f(); })`); last != n {
		t.Errorf("after the last event the page got %v, want %d", last, n)
	}
	if l := eval[int](tb, `got.length`); l != n+1 {
		t.Errorf("the page has %d events, want %d", l, n+1)
	}
	if l := eval[int](tb, `got0.length`); l != len(want0) {
		t.Errorf("the subscriber of feed.t0 has %d events, want %d", l, len(want0))
	}
	pos := eval[map[string]any](tb, `c.subscriptions[0].position`)
	if pos["seq"] != float64(n+1) || pos["epoch"] == "" {
		t.Errorf("position %v, want seq %d", pos, n+1)
	}
	eval[bool](tb, `(c.close(), true)`)
}

// TestClientHistoryAndPresence reads the hub's history and presence from
// the page, and gets a Go peer's join and leave.
func TestClientHistoryAndPresence(t *testing.T) {
	tb, h := openClientPage(t)
	eval[bool](tb, `(async () => {
		window.c = await sb.connect(hub);
		window.changes = [];
		window.presenceChange = (n) => new Promise((r) => { const f = () => changes.length >= n ? r(changes.slice(0, n)) : setTimeout(f, 5); f(); });
		await c.subscribe("room.1", () => {}, { onPresence: (ch) => changes.push(ch.join ? "join" : "leave") });
		return true;
	})()`)
	g := dial(t, h.WebSocketURL())
	sub, err := g.Subscribe(t.Context(), "room.>", func(client.Event) {})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := g.Publish(t.Context(), "room.1", fmt.Sprintf("m%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if got := eval[int](tb, `c.presence("room.1").then((p) => p.length)`); got != 2 {
		t.Errorf("presence of room.1: %d peers, want 2", got)
	}
	hist := eval[[]any](tb, `c.history("room.1", {limit: 2}).then((h) => h.events.map((e) => [e.data, e.seq > 0, e.epoch === h.epoch]))`)
	if want := []any{[]any{"m1", true, true}, []any{"m2", true, true}}; !reflect.DeepEqual(hist, want) {
		t.Errorf("history: %v, want %v", hist, want)
	}
	if err := sub.Unsubscribe(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := eval[[]string](tb, `presenceChange(2)`); !reflect.DeepEqual(got, []string{"join", "leave"}) {
		t.Errorf("presence changes: %v", got)
	}
	eval[bool](tb, `(c.close(), true)`)
}

// TestClientCallsProvidedMethod calls, from the page, a method that a Go
// peer provides, and the other way round, through the hub.
func TestClientCallsProvidedMethod(t *testing.T) {
	tb, h := openClientPage(t)
	g := dial(t, h.WebSocketURL())
	type args struct {
		Cents int `json:"cents"`
	}
	prov, err := g.Provide(t.Context(), "billing.charge", peer.Func(func(ctx context.Context, a args) (map[string]int, error) {
		if a.Cents < 0 {
			return nil, &peer.Error{Code: 4002, Message: "negative", Data: json.RawMessage(fmt.Sprintf(`{"cents":%d}`, a.Cents))}
		}
		_ = peer.Progress(ctx, "charging")
		return map[string]int{"charged": a.Cents}, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer prov.Close()
	got := eval[map[string]any](tb, `(async () => {
		const c = await sb.connect(hub);
		const progress = [];
		const ok = await c.call("billing.charge", {cents: 1250}, { onProgress: (p) => progress.push(p) });
		const err = await c.call("billing.charge", {cents: -1}).catch((e) => e);
		await c.provide("page.*", async (params, { method }) => method + ":" + params.name);
		window.c = c;
		return { ok, progress, code: err.code, data: err.data, isRPC: err instanceof sb.RPCError };
	})()`)
	want := map[string]any{
		"ok":       map[string]any{"charged": float64(1250)},
		"progress": []any{"charging"},
		"code":     float64(4002),
		"data":     map[string]any{"cents": float64(-1)},
		"isRPC":    true,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the page got %v, want %v", got, want)
	}
	var greeting string
	if err := g.Call(t.Context(), "page.greet", map[string]string{"name": "ada"}, &greeting); err != nil {
		t.Fatal(err)
	}
	if greeting != "page.greet:ada" {
		t.Errorf("page.greet answered %q", greeting)
	}
	eval[bool](tb, `(c.close(), true)`)
}
