package hubproc

import (
	"strings"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/internal/testkit"
)

// A hub that cannot start is reported at once, with its output, not
// waited for until the timeout: with a timeout of an hour, only its exit
// ends the wait (the test timed it before, which counted building the
// hub's binary too: 32 s on a loaded machine).
func TestStartReportsExit(t *testing.T) {
	h := &Hub{t: t, log: &testkit.Buffer{}, opts: Options{Args: []string{"-no-such-flag"}, StartTimeout: time.Hour}}
	var err error
	if h.addr, err = FreeAddr(); err != nil {
		t.Fatal(err)
	}
	err = h.start()
	if err == nil || !strings.Contains(err.Error(), "exited while starting") {
		t.Fatalf("start: %v", err)
	}
	if !strings.Contains(h.Log(), "flag provided but not defined: -no-such-flag") {
		t.Fatalf("log lacks the hub's complaint:\n%s", h.Log())
	}
	if h.Running() {
		t.Fatal("still running")
	}
}
