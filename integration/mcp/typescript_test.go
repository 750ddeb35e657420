package mcp_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/switchboard-rpc/switchboard/integration/internal/hubproc"
	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

// TestTypeScriptSDK runs web/test/mcp/sdk.test.mjs with node against a
// hub started with -demo: the official TypeScript SDK's client lists and
// calls a tool a switchboard.js client provides, and cancels a call.
func TestTypeScriptSDK(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node not installed: this test needs Node.js")
	}
	web, err := filepath.Abs(filepath.Join("..", "..", "web"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(web, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		t.Fatal("the TypeScript SDK is not installed: run npm ci in web/ first")
	}
	h := hubproc.Start(t, &hubproc.Options{Args: []string{"-demo", "-log-level", "warn"}})
	ctx, cancel := context.WithTimeout(t.Context(), 2*testkit.Wait)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--test", "--test-reporter=spec", "test/mcp/sdk.test.mjs")
	cmd.Dir = web
	cmd.Env = append(os.Environ(), "SWITCHBOARD_URL="+h.URL())
	out, err := cmd.CombinedOutput()
	t.Logf("node:\n%s", out)
	if err != nil {
		t.Fatalf("sdk.test.mjs: %v", err)
	}
}
