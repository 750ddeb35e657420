// Package browser_test drives a real headless Chromium against a real hub
// process: the JavaScript client (switchboard.js) in a page, and the
// playground through its own UI. One browser serves the whole test binary;
// each test opens its own tab and starts its own hub.
//
// Chromium must be installed (Debian: apt-get install chromium; or set
// CHROMIUM to its path). Without it the tests fail, never skip.
//
// SWITCHBOARD_SCREENSHOTS=dir saves screenshots of the playground there
// (make screenshots writes docs/img).
package browser_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/switchboard-rpc/switchboard/integration/internal/hubproc"
	"go.uber.org/goleak"
)

// browser is the context of the shared browser; tabs are its children.
var browser context.Context

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	defer hubproc.Cleanup()
	path, err := chromium()
	if err != nil {
		fmt.Fprintf(os.Stderr, "integration/browser: %v\n", err)
		return 1
	}
	profile, err := os.MkdirTemp("", "chromium-profile-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(profile)

	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(profile),
		// Chromium reaches out to Google at start and in the background;
		// where the network is closed that fails, loudly and slowly.
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		// Timers of tabs that are not in front run at full speed.
		chromedp.Flag("disable-background-timer-throttling", true),
		chromedp.Flag("disable-renderer-backgrounding", true),
	)
	ctx, cancel := chromedp.NewContext(alloc)
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		cancelAlloc()
		fmt.Fprintf(os.Stderr, "integration/browser: starting %s: %v\n", path, err)
		return 1
	}
	browser = ctx

	code := m.Run()

	_ = chromedp.Cancel(ctx)
	cancel()
	cancelAlloc()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	return code
}

// chromium finds the browser: $CHROMIUM, or a chromium on the PATH.
func chromium() (string, error) {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("Chromium is not installed; these tests need it: apt-get install chromium (or set CHROMIUM=/path/to/chrome)")
}
