// Package deploy_test runs the walk-through of docs/security.md,
// "Deploying for real": one hub process started with only the example
// config file (docs/hub.example.yaml; the key file's path comes from the
// environment), a backend that publishes over HTTP POST with its token, and
// browser pages (headless Chromium) whose tokens expire.
//
// Chromium must be installed (see integration/internal/chrome); without it
// the tests fail, never skip.
package deploy_test

import (
	"context"
	"os"
	"testing"

	"github.com/switchboard-rpc/switchboard/integration/internal/chrome"
)

// browser is the context of the shared browser; tabs are its children.
var browser context.Context

func TestMain(m *testing.M) { os.Exit(chrome.Main(m, "integration/deploy", &browser)) }
