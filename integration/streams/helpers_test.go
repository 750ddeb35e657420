package streams_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/switchboard-rpc/switchboard/integration/internal/hubproc"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	code := m.Run()
	hubproc.Cleanup()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "streams: leaked goroutines:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// startHub starts a demo hub whose collector runs often (GOGC=20), so
// that its heap in use follows what it holds.
func startHub(t *testing.T, args ...string) *hubproc.Hub {
	t.Helper()
	return hubproc.Start(t, &hubproc.Options{
		Args: append([]string{"-demo", "-log-level", "warn"}, args...),
		Env:  []string{"GOGC=20"},
	})
}
