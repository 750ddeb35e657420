package browser_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/switchboard-rpc/switchboard/integration/internal/hubproc"
)

// clientPage is a page on another origin than the hub's that imports
// switchboard.js from the hub, as a web app would, and offers the tests a
// recorder of frames (the client's trace option) to wait on.
const clientPage = `<!doctype html>
<title>client test</title>
<script type="module">
import * as sb from "%[1]s/switchboard.js";
window.errors = [];
addEventListener("error", (e) => errors.push("error: " + e.message));
addEventListener("unhandledrejection", (e) => errors.push("unhandled rejection: " + e.reason));
window.hub = "%[2]s";
// recorder keeps the frames of a client; waitFor resolves with the first
// frame, past or future, that test accepts.
window.recorder = () => {
  const frames = [];
  const waiters = [];
  return {
    frames,
    trace: (d, t) => {
      frames.push([d, t]);
      for (const w of [...waiters]) if (w.test(d, t)) waiters.splice(waiters.indexOf(w), 1), w.resolve(t);
    },
    waitFor: (test) => {
      const hit = frames.find(([d, t]) => test(d, t));
      return hit ? Promise.resolve(hit[1]) : new Promise((resolve) => waiters.push({ test, resolve }));
    },
  };
};
// nextState resolves with the client's next "state" event of that state.
window.nextState = (client, state) => new Promise((resolve) => {
  const f = (e) => { if (e.state === state) { client.removeEventListener("state", f); resolve(e); } };
  client.addEventListener("state", f);
});
window.sb = sb;
</script>`

// openClientPage starts a demo hub that lets pages of other origins on
// 127.0.0.1 connect, serves clientPage from such an origin, and opens it.
func openClientPage(t *testing.T, hubArgs ...string) (*tab, *hubproc.Hub) {
	t.Helper()
	h := hubproc.Start(t, &hubproc.Options{Args: append([]string{"-demo", "-origins", "127.0.0.1:*"}, hubArgs...)})
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, clientPage, h.URL(), h.WebSocketURL())
	}))
	t.Cleanup(page.Close)
	tb := newTab(t)
	tb.do(chromedp.Navigate(page.URL))
	// The module ran before the load event that Navigate waited for: the
	// hub let another origin import it (CORS).
	if !eval[bool](tb, `typeof window.sb === "object"`) {
		t.Fatal("switchboard.js did not load")
	}
	t.Cleanup(func() {
		if errs := eval[[]string](tb, `window.errors`); len(errs) > 0 {
			t.Errorf("the page reported: %q", errs)
		}
	})
	return tb, h
}

func TestClientCalls(t *testing.T) {
	tb, _ := openClientPage(t)
	type rpcErr struct {
		IsRPCError, IsError bool
		Code                int
		Message             string
	}
	got := eval[struct {
		Add, Subtract float64
		Nope          rpcErr
		Invalid       int
		Batch         []any
		Big           []any
		BigSupported  bool
	}](tb, `(async () => {
  const rpc = await sb.connect(hub);
  const out = {};
  out.add = await rpc.call("add", [1, 2]);
  out.subtract = await rpc.call("subtract", { minuend: 42, subtrahend: 23 });
  try { await rpc.call("nope"); } catch (e) {
    out.nope = { isRPCError: e instanceof sb.RPCError, isError: e instanceof Error, code: e.code, message: e.message };
  }
  try { await rpc.call("sleep", { ms: -1 }); } catch (e) { out.invalid = e.code; }
  const b = await rpc.batch([
    { method: "sum", params: [1, 2, 4] },
    { method: "notify_hello", params: [7], notification: true },
    { method: "get_data" },
    { method: "foo.get", params: { name: "myself" } },
  ]);
  out.batch = b.map((r) => (r.status === "fulfilled" ? r.value ?? "sent" : r.reason.code));
  await rpc.notify("update", [1, 2, 3]);
  // Integers beyond 2^53 come back exactly with bigNumbers.
  const big = await sb.connect(hub, { bigNumbers: true });
  const v = await big.call("echo", [12345678901234567890n, 1.5]);
  out.big = [typeof v[0], String(v[0]), v[1]];
  out.bigSupported = sb.bigNumbersSupported;
  rpc.close();
  big.close();
  return out;
})()`)
	if got.Add != 3 || got.Subtract != 19 {
		t.Errorf("add %v, subtract %v", got.Add, got.Subtract)
	}
	if want := (rpcErr{true, true, -32601, "Method not found"}); got.Nope != want {
		t.Errorf("unknown method: %+v, want %+v", got.Nope, want)
	}
	if got.Invalid != -32602 {
		t.Errorf("bad params: code %d, want -32602", got.Invalid)
	}
	if want := []any{7.0, "sent", []any{"hello", 5.0}, -32601.0}; !reflect.DeepEqual(got.Batch, want) {
		t.Errorf("batch: %v, want %v", got.Batch, want)
	}
	if !got.BigSupported {
		t.Error("Chromium has JSON.parse source text access; bigNumbersSupported says no")
	}
	if want := []any{"bigint", "12345678901234567890", 1.5}; !reflect.DeepEqual(got.Big, want) {
		t.Errorf("big numbers: %v, want %v", got.Big, want)
	}
}

func TestClientCancellation(t *testing.T) {
	tb, _ := openClientPage(t)
	got := eval[struct {
		Aborted, TimedOut          bool
		Progress                   int
		AbortAnswer, TimeoutAnswer string
		After                      float64
	}](tb, `(async () => {
  const rec = recorder();
  const rpc = await sb.connect(hub, { trace: rec.trace });
  // answerTo waits for the hub's answer to the call whose frame has marker.
  const answerTo = async (marker) => {
    const sent = JSON.parse(await rec.waitFor((d, t) => d === "send" && t.includes(marker)));
    await rec.waitFor((d, t) => d === "send" && t.includes('"rpc.cancel"') && JSON.parse(t).params.id === sent.id);
    return rec.waitFor((d, t) => d === "receive" && t.includes('"error"') && JSON.parse(t).id === sent.id);
  };
  const out = { progress: 0 };
  // Abort after the first progress report.
  const ctl = new AbortController();
  const reason = new Error("stop");
  try {
    await rpc.call("sleep", { ms: 60000 }, { signal: ctl.signal, onProgress: () => { out.progress++; ctl.abort(reason); } });
  } catch (e) { out.aborted = e === reason; }
  out.abortAnswer = await answerTo('"ms":60000}');
  // A timeout cancels too.
  try { await rpc.call("sleep", { ms: 60001 }, { timeout: 150 }); } catch (e) { out.timedOut = e instanceof sb.TimeoutError; }
  out.timeoutAnswer = await answerTo('"ms":60001}');
  out.after = await rpc.call("add", [2, 2]);
  rpc.close();
  return out;
})()`)
	if !got.Aborted || got.Progress != 1 || !got.TimedOut || got.After != 4 {
		t.Errorf("%+v", got)
	}
	// The hub stopped both sleeps and said so (the client had moved on).
	for _, a := range []string{got.AbortAnswer, got.TimeoutAnswer} {
		if want := `"code":-32002`; !strings.Contains(a, want) {
			t.Errorf("hub's answer to a cancelled sleep: %s, want %s", a, want)
		}
	}
}

func TestClientSubscriptions(t *testing.T) {
	tb, h := openClientPage(t)
	eval[bool](tb, `(async () => {
  const a = await sb.connect(hub);
  window.rec = recorder();
  const b = await sb.connect(hub, { trace: rec.trace });
  window.b = b;
  // Two events, each to two handlers and two throwing subscribers: four
  // deliveries and four error events in all.
  window.got = [];
  window.errorEvents = [];
  const counted = (arr) => {
    let done;
    const all = new Promise((r) => (done = r));
    return { all, push: (x) => { arr.push(x); if (arr.length === 4) done(); } };
  };
  const deliveries = counted(got);
  const errs = counted(errorEvents);
  window.allDelivered = deliveries.all;
  window.allErrors = errs.all;
  b.addEventListener("error", (e) => { e.preventDefault(); errs.push(e.context + ": " + e.error.message); });
  const h = (ev) => deliveries.push(["h", ev.topic, ev.data.text]);
  window.s = [
    await b.subscribe("chat.*", h),
    await b.subscribe("chat.*", h),
    await b.subscribe("chat.>", h),
    await b.subscribe("chat.*", () => { throw new Error("boom"); }),
    await b.subscribe("chat.>", async () => { throw new Error("async boom"); }),
  ];
  s.push(await b.subscribe("chat.>", (ev) => deliveries.push(["other", ev.topic, ev.data.text])));
  window.delivered = await a.publish("chat.room1", { text: "hi" });
  a.close();
  return true;
})()`)
	// And one from another peer, over HTTP.
	publish(t, h.URL(), "chat.room2", `{"text":"from Go"}`)
	got := eval[struct {
		Delivered   int
		Got         [][]string
		Errors      []string
		Subscribes  int
		Topics      []string
		Unsubscribe []string
	}](tb, `(async () => {
  await allDelivered;
  await allErrors;
  const out = { delivered, got, errors: errorEvents };
  out.subscribes = rec.frames.filter(([d, t]) => d === "send" && t.includes('"rpc.subscribe"')).length;
  // Unsubscribing every chat.* subscription but one keeps the pattern;
  // the last one sends rpc.unsubscribe.
  await s[0].unsubscribe();
  await s[1].unsubscribe();
  out.topics = b.subscriptions.map((x) => x.topic);
  await s[3].unsubscribe();
  out.unsubscribe = rec.frames.filter(([d, t]) => d === "send" && t.includes('"rpc.unsubscribe"')).map(([, t]) => JSON.parse(t).params.topic);
  b.close();
  return out;
})()`)
	if got.Delivered != 1 {
		t.Errorf("delivered %d, want 1 (one peer subscribed)", got.Delivered)
	}
	// h is subscribed three times; it gets each event once. The other
	// handler gets each once too; the throwing ones do not stop them.
	want := [][]string{{"h", "chat.room1", "hi"}, {"other", "chat.room1", "hi"}, {"h", "chat.room2", "from Go"}, {"other", "chat.room2", "from Go"}}
	if !reflect.DeepEqual(got.Got, want) {
		t.Errorf("deliveries:\n got %v\nwant %v", got.Got, want)
	}
	if len(got.Errors) != 4 || got.Errors[0] != "subscriber of chat.*: boom" {
		t.Errorf("error events: %q, want two per event, from the throwing subscribers", got.Errors)
	}
	if got.Subscribes != 2 {
		t.Errorf("%d rpc.subscribe sent, want 2: one per pattern", got.Subscribes)
	}
	if want := []string{"chat.*", "chat.>", "chat.>", "chat.>"}; !reflect.DeepEqual(got.Topics, want) {
		t.Errorf("subscriptions: %v, want %v", got.Topics, want)
	}
	if want := []string{"chat.*"}; !reflect.DeepEqual(got.Unsubscribe, want) {
		t.Errorf("rpc.unsubscribe sent for %v, want %v", got.Unsubscribe, want)
	}
}

func TestClientServesTheHub(t *testing.T) {
	tb, _ := openClientPage(t)
	got := eval[struct {
		Greet          string
		Refuse         map[string]any
		Outer          string
		HandlerAborted bool
	}](tb, `(async () => {
  const rpc = await sb.connect(hub);
  const out = {};
  // The demo's callback makes the hub call the caller back.
  rpc.register("greet", async (p) => "hello, " + p.name);
  out.greet = await rpc.call("callback", { method: "greet", params: { name: "browser" } });
  rpc.register("refuse", () => { throw new sb.RPCError(4001, "refused", { why: "test" }); });
  try { await rpc.call("callback", { method: "refuse" }); } catch (e) { out.refuse = { code: e.code, message: e.message, data: e.data }; }
  // Cancelling the outer call makes the hub cancel its call to us.
  let started, aborted;
  const startedP = new Promise((r) => (started = r));
  const abortedP = new Promise((r) => (aborted = r));
  rpc.register("wait", (p, { signal }) => new Promise((_, reject) => {
    started();
    signal.addEventListener("abort", () => { aborted(true); reject(signal.reason); });
  }));
  const ctl = new AbortController();
  const outer = rpc.call("callback", { method: "wait" }, { signal: ctl.signal }).catch((e) => e);
  await startedP;
  ctl.abort(new Error("enough"));
  out.outer = (await outer).message;
  out.handlerAborted = await abortedP;
  rpc.close();
  return out;
})()`)
	if got.Greet != "hello, browser" {
		t.Errorf("greet: %q", got.Greet)
	}
	if want := map[string]any{"code": 4001.0, "message": "refused", "data": map[string]any{"why": "test"}}; !reflect.DeepEqual(got.Refuse, want) {
		t.Errorf("refuse: %v, want %v", got.Refuse, want)
	}
	if got.Outer != "enough" || !got.HandlerAborted {
		t.Errorf("cancel through the hub: outer %q, handler aborted %v", got.Outer, got.HandlerAborted)
	}
}

func TestClientReconnects(t *testing.T) {
	tb, h := openClientPage(t)
	eval[bool](tb, `(async () => {
  window.states = [];
  window.rc = new sb.Client(hub, { minBackoff: 50, maxBackoff: 200 });
  rc.addEventListener("state", (e) => states.push([e.state, e.code ?? 0, e.reason]));
  await nextState(rc, "open");
  window.events = [];
  let ev;
  window.event = new Promise((r) => (ev = r));
  await rc.subscribe("news.>", (e) => { events.push(e.missed ? "missed" : e.data); if (!e.missed) ev(); });
  window.down = nextState(rc, "disconnected");
  return true;
})()`)
	if err := h.Stop(); err != nil {
		t.Fatal(err)
	}
	eval[bool](tb, `(async () => {
  await down;
  // Made during the outage: one waits for the connection, one fails fast.
  window.during = rc.call("add", [2, 3]);
  window.fast = rc.call("add", [1, 1], { failFast: true }).then(() => "sent", (e) => e.name);
  window.up = nextState(rc, "open");
  return true;
})()`)
	h.Restart()
	eval[bool](tb, `up.then(() => true)`)
	// Subscribed again by itself: the hub has a new epoch, so the
	// subscription is told it missed events; one published now arrives.
	publish(t, h.URL(), "news.back", `"again"`)
	got := eval[struct {
		During float64
		Fast   string
		Events []string
		States [][]any
	}](tb, `(async () => {
  await event;
  const out = { during: await during, fast: await fast, events, states: [...states] };
  rc.close();
  return out;
})()`)
	if got.During != 5 || got.Fast != "DisconnectedError" {
		t.Errorf("calls during the outage: waited %v, fail-fast %q", got.During, got.Fast)
	}
	if !reflect.DeepEqual(got.Events, []string{"missed", "again"}) {
		t.Errorf("events after the restart: %v", got.Events)
	}
	// connecting, open, then the hub's going away, retries, open again.
	s := got.States
	if len(s) < 5 || s[0][0] != "connecting" || s[1][0] != "open" || s[2][0] != "disconnected" || s[2][1] != 1001.0 || s[len(s)-1][0] != "open" {
		t.Errorf("states: %v", s)
	}
}
