package testkit

import (
	"os"
	"testing"
)

// WriteFile writes data to the file at path, readable by its owner only
// (as a key or a config file wants), or fails the test; it returns path.
func WriteFile(t testing.TB, path string, data []byte) string {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
