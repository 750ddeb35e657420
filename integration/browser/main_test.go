// Package browser_test drives a real headless Chromium against a real hub
// process: the JavaScript client (switchboard.js) in a page, and the
// playground through its own UI. One browser serves the whole test binary;
// each test opens its own tab and starts its own hub.
//
// Chromium must be installed (see integration/internal/chrome); without it
// the tests fail, never skip.
//
// SWITCHBOARD_SCREENSHOTS=dir saves screenshots of the playground there
// (make screenshots writes docs/img).
package browser_test

import (
	"context"
	"os"
	"testing"

	"github.com/switchboard-rpc/switchboard/integration/internal/chrome"
)

// browser is the context of the shared browser; tabs are its children.
var browser context.Context

func TestMain(m *testing.M) { os.Exit(chrome.Main(m, "integration/browser", &browser)) }
