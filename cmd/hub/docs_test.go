package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

// docBlock returns the fenced code block of a doc that starts with first.
func docBlock(t *testing.T, doc, first string) string {
	t.Helper()
	text, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(text), "```python\n"+first)
	if !ok {
		t.Fatalf("%s has no block starting %q", doc, first)
	}
	block, _, _ := strings.Cut(rest, "```")
	return first + block
}

// docs/security.md's mint.py makes tokens the hub takes, with the
// switchboard claim (JSON) and other claims (strings) it describes.
func TestMintPy(t *testing.T) {
	dir := t.TempDir()
	script := testkit.WriteFile(t, filepath.Join(dir, "mint.py"), []byte(docBlock(t, "../../docs/security.md", "# mint.py")))
	testkit.WriteFile(t, filepath.Join(dir, "hub.key"), []byte(testSecret))
	cmd := exec.Command("python3", script, "alice", "3600", `switchboard={"subscribe": ["user.alice.>"]}`, "role=backend")
	cmd.Dir = dir
	tok, err := cmd.Output()
	if err != nil {
		t.Fatalf("mint.py: %v", err)
	}
	key := writeFile(t, "hub.key", testSecret)
	out, err := checktoken(t, "-jwt-key", key, "-jwt-audience", "switchboard", strings.TrimSpace(string(tok)))
	if err != nil || !strings.Contains(out, `grants:  {"subscribe":["user.alice.>"]}`) || !strings.Contains(out, "with exactly its grants") {
		t.Errorf("mint.py's token: %v\n%s", err, out)
	}
}
