package browser_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/switchboard-rpc/switchboard/client"
	"github.com/switchboard-rpc/switchboard/integration/internal/testclient"
	"github.com/switchboard-rpc/switchboard/peer"
)

// tab is one browser tab of a test. It fails the test if the page throws
// an exception nothing caught.
type tab struct {
	t   *testing.T
	ctx context.Context

	mu         sync.Mutex
	exceptions []string
}

// newTab opens a tab; it closes when the test ends.
func newTab(t *testing.T) *tab {
	t.Helper()
	tb := &tab{t: t}
	ctx, cancel := chromedp.NewContext(browser, chromedp.WithListener(func(ev any) {
		if e, ok := ev.(*runtime.EventExceptionThrown); ok {
			tb.mu.Lock()
			defer tb.mu.Unlock()
			d := e.ExceptionDetails
			text := d.Text
			if d.Exception != nil {
				text += " " + d.Exception.Description
			}
			tb.exceptions = append(tb.exceptions, text)
		}
	}))
	tb.ctx = ctx
	if err := chromedp.Do(ctx); err != nil { // opens the tab
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		tb.mu.Lock()
		ex := tb.exceptions
		tb.mu.Unlock()
		for _, e := range ex {
			t.Errorf("uncaught exception in the page: %s", e)
		}
		cancel()
	})
	return tb
}

// do runs actions, within 30 seconds.
func (tb *tab) do(actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		tb.t.Fatal(err)
	}
}

// eval evaluates a JavaScript expression, awaiting a Promise, within 30
// seconds, and decodes its value.
func eval[T any](tb *tab, js string) T {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		tb.t.Fatalf("%v\nin: %s", err, js)
	}
	return v
}

// text returns the text content of the first element matching sel, once
// it is visible.
func (tb *tab) text(sel string) string {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS(sel)))
	if err != nil {
		tb.t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

// waitText waits until an element matching sel contains want.
func (tb *tab) waitText(sel, want string) {
	tb.t.Helper()
	js := fmt.Sprintf(`[...document.querySelectorAll(%q)].some((e) => e.textContent.includes(%q))`, sel, want)
	tb.waitTrue(fmt.Sprintf("%q in %s", want, sel), js)
}

// waitTrue waits, for up to 30 s, until the JavaScript expression js is
// true, checking it whenever the page changes; what says what it waits
// for.
func (tb *tab) waitTrue(what, js string) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingMutation())); err != nil {
		tb.t.Fatalf("waiting for %s: %v%s", what, err, tb.failureShot())
	}
}

// screenshot captures the viewport as PNG and saves it as name in
// $SWITCHBOARD_SCREENSHOTS, when that is set.
func (tb *tab) screenshot(name string) []byte {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		tb.t.Fatal(err)
	}
	if dir := os.Getenv("SWITCHBOARD_SCREENSHOTS"); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
			tb.t.Fatal(err)
		}
		tb.t.Logf("saved %s", filepath.Join(dir, name))
	}
	return png
}

// failureShot saves a screenshot of the page, for a failing test, and
// says where.
func (tb *tab) failureShot() string {
	ctx, cancel := context.WithTimeout(tb.ctx, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		return ""
	}
	f, err := os.CreateTemp("", strings.ReplaceAll(tb.t.Name(), "/", "_")+"-*.png")
	if err != nil {
		return ""
	}
	defer f.Close()
	if _, err := f.Write(png); err != nil {
		return ""
	}
	return "\nthe page then: " + f.Name()
}

// provideCents provides method, through a client of the hub at url, as
// another peer, and returns that client: the method takes {"cents": N}
// and answers N.
func provideCents(t *testing.T, url, method string) *client.Client {
	t.Helper()
	svc, _ := testclient.Dial(t, url, nil)
	fn := peer.Func(func(_ context.Context, p struct {
		Cents int `json:"cents"`
	}) (int, error) {
		return p.Cents, nil
	})
	if _, err := svc.Provide(t.Context(), method, fn); err != nil {
		t.Fatal(err)
	}
	return svc
}

// publish publishes data (JSON) on topic through the hub, as another peer.
func publish(t *testing.T, url, topic, data string) {
	t.Helper()
	reply := testclient.Post(t, t.Context(), url, "", fmt.Sprintf(`{"jsonrpc":"2.0","method":"rpc.publish","params":{"topic":%q,"data":%s},"id":1}`, topic, data))
	if !strings.Contains(reply, `"delivered"`) {
		t.Fatalf("publish: %s", reply)
	}
}
