// Package deploy_test runs the walk-through of docs/security.md,
// "Deploying for real": one hub process started with only the example
// config file (docs/hub.example.yaml; the key file's path comes from the
// environment), a backend that publishes over HTTP POST with its token, and
// browser pages (headless Chromium) whose tokens expire.
//
// Chromium must be installed (Debian: apt-get install chromium; or set
// CHROMIUM to its path). Without it the tests fail, never skip.
package deploy_test

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
		fmt.Fprintf(os.Stderr, "integration/deploy: %v\n", err)
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
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-background-timer-throttling", true),
		chromedp.Flag("disable-renderer-backgrounding", true),
	)
	ctx, cancel := chromedp.NewContext(alloc)
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		cancelAlloc()
		fmt.Fprintf(os.Stderr, "integration/deploy: starting %s: %v\n", path, err)
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
