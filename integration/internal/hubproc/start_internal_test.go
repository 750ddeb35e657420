package hubproc

import (
	"strings"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

// A hub that cannot start is reported at once, with its output, not
// waited for until the timeout.
func TestStartReportsExit(t *testing.T) {
	h := &Hub{t: t, log: &testkit.Buffer{}, opts: Options{Args: []string{"-no-such-flag"}, StartTimeout: time.Minute}}
	var err error
	if h.addr, err = freeAddr(); err != nil {
		t.Fatal(err)
	}
	// Built first: on a loaded machine the build alone can take longer
	// than the limit below, which is about the wait, not the build.
	if _, err := command("hub", raceEnabled); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = h.start()
	if err == nil || !strings.Contains(err.Error(), "exited while starting") {
		t.Fatalf("start: %v", err)
	}
	if time.Since(start) > 30*time.Second {
		t.Fatalf("start took %v: it waited for the timeout", time.Since(start))
	}
	if !strings.Contains(h.Log(), "flag provided but not defined: -no-such-flag") {
		t.Fatalf("log lacks the hub's complaint:\n%s", h.Log())
	}
	if h.Running() {
		t.Fatal("still running")
	}
}
