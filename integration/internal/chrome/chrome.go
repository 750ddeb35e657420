// Package chrome starts the one headless Chromium that a test binary's
// tabs share, for the packages that drive real pages (browser, deploy).
//
// Chromium must be installed (Debian: apt-get install chromium; or set
// CHROMIUM to its path). Without it the tests fail, never skip.
package chrome

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

// Main runs m with a browser started for it, set in *browser (tabs are
// its children), and returns the exit code: 1 when Chromium is missing
// or does not start, or when the tests leave goroutines behind. name
// prefixes its messages. Every hub process the tests started is ended.
func Main(m *testing.M, name string, browser *context.Context) int {
	defer hubproc.Cleanup()
	path, err := find()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
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
		fmt.Fprintf(os.Stderr, "%s: starting %s: %v\n", name, path, err)
		return 1
	}
	*browser = ctx

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

// find finds the browser: $CHROMIUM, or a chromium on the PATH.
func find() (string, error) {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("chromium is not installed; these tests need it: apt-get install chromium (or set CHROMIUM=/path/to/chrome)")
}
