package browser_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/switchboard-rpc/switchboard/client"
	"github.com/switchboard-rpc/switchboard/integration/internal/testclient"
)

// One tab calls another by its peer id: the Peers panel of the first
// fills the Request form with an rpc.call addressed to the second, which
// answers with a method it registered. It needs rpc.call and rpc.whoami
// in the hub (docs/protocol.md, "Calling one particular peer").
func TestPlaygroundCallThisPeer(t *testing.T) {
	a, h := openPlayground(t, 1280, 900)
	b := openSecondPlayground(t, h.URL())
	b.do(
		serveReply("tab.greet", `"hello from tab b"`),
		chromedp.Click(chromedp.CSS("#register-form button")),
		chromedp.Click(chromedp.CSS("#presence-form button")),
	)
	b.waitText("#presence-result", "1 peer on chat.room1")
	b.do(chromedp.Click(chromedp.CSS("#whoami")))
	b.waitText("#me", "This page is peer ")
	id := eval[string](b, `document.querySelector("#me").textContent.match(/peer ([0-9a-f-]+)/)[1]`)
	b.waitText(`#peers .peer[data-peer="`+id+`"] .badge`, "you")

	a.do(typeInto("#peer-method", "tab.greet"), chromedp.Click(chromedp.CSS("#presence-form button")))
	a.waitText("#presence-result", "2 peers on chat.room1")
	a.do(chromedp.Click(chromedp.CSS(`#peers .peer[data-peer="` + id + `"] button`)))
	if m := eval[string](a, `document.querySelector("#method").value`); m != "rpc.call" {
		t.Errorf("the form's method: %q", m)
	}
	var params struct{ Peer, Method string }
	if err := json.Unmarshal([]byte(eval[string](a, `document.querySelector("#params").value`)), &params); err != nil || params.Peer != id || params.Method != "tab.greet" {
		t.Errorf("the form's params: %+v (%v)", params, err)
	}
	a.do(chromedp.Click(chromedp.CSS("#call")))
	a.waitText("#calls .entry:first-child .badge", "result")
	if got := a.text("#calls .entry:first-child pre.result"); got != `"hello from tab b"` {
		t.Errorf("a's rpc.call to b: %s", got)
	}
	b.waitText("#incoming .entry:first-child", "tab.greet")
	b.waitText("#incoming .entry:first-child .badge", "answered")
}

// After the hub restarts, the Peers panel shows who is there now: a peer
// that left while the page was disconnected is gone from it, and the page
// is marked "you" under its new peer id.
func TestPlaygroundPeersAfterReconnect(t *testing.T) {
	a, h := openPlayground(t, 1280, 900)
	other, _ := testclient.Dial(t, h.WebSocketURL(), nil)
	if _, err := other.Subscribe(t.Context(), "chat.room1", func(client.Event) {}); err != nil {
		t.Fatal(err)
	}
	a.do(chromedp.Click(chromedp.CSS("#presence-form button")), chromedp.Click(chromedp.CSS("#whoami")))
	a.waitText("#presence-result", "2 peers on chat.room1")
	a.waitText("#peers .peer .badge", "you")
	before := eval[string](a, `document.querySelector("#me").textContent`)

	if err := h.Stop(); err != nil {
		t.Fatal(err)
	}
	a.waitText("#conn-text", "disconnected")
	if err := other.Close(); err != nil { // it leaves during the outage
		t.Fatal(err)
	}
	h.Restart()
	a.waitTrue("the Peers panel to list this page alone, as you", `(() => {
  const ps = document.querySelectorAll("#peers .peer");
  return ps.length === 1 && ps[0].querySelector(".badge")?.textContent === "you";
})()`)
	id := eval[string](a, `document.querySelector("#me").textContent.match(/peer ([0-9a-f-]+)/)[1]`)
	if strings.Contains(before, id) || a.text("#peers .peer code") != id {
		t.Fatalf("after the restart the page says it is %s, and lists %s; it was: %s", id, a.text("#peers .peer code"), before)
	}
	a.waitText("#presence-result", "Connected again")
}

// A method another peer provides after the page has loaded is not in the
// picker yet; typing its name makes the page ask rpc.discover again, and
// the method shows with its signature and a params template.
func TestPlaygroundDiscoversNewMethods(t *testing.T) {
	a, h := openPlayground(t, 1280, 900)
	provideCents(t, h.WebSocketURL(), "svc.fresh")
	if eval[bool](a, `[...document.querySelectorAll("#methods option")].some((o) => o.value === "svc.fresh")`) {
		t.Fatal("the picker knew svc.fresh before it was asked again")
	}
	a.do(
		typeInto("#method", "svc.fresh"),
		chromedp.Evaluate[chromedp.Void](`document.querySelector("#method").dispatchEvent(new Event("change"))`),
	)
	a.waitText("#method-info .sig", "svc.fresh(")
	a.waitTrue("a params template with cents", `document.querySelector("#params").value.includes("cents")`)
	a.do(chromedp.Click(chromedp.CSS("#call")))
	a.waitText("#calls .entry:first-child .badge", "result")
}
