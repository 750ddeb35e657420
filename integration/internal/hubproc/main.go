package hubproc

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// Main runs the tests of a package that starts hubs: it removes the built
// binaries afterwards and, when the tests passed, fails the run if any
// goroutine was left behind. Call it as the whole of TestMain:
//
//	func TestMain(m *testing.M) { hubproc.Main(m) }
func Main(m *testing.M) {
	code := m.Run()
	Cleanup()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "leaked goroutines:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// StartDemo starts a hub with the demo methods (-demo) and warnings only
// in its log, plus args, with its metrics and profiles on a second
// address (Options.Admin), so that [Hub.Baseline] and [Hub.WaitRecovered]
// can see what its heap holds after a collection.
func StartDemo(t testing.TB, args ...string) *Hub {
	t.Helper()
	return Start(t, &Options{
		Args:  append([]string{"-demo", "-log-level", "warn"}, args...),
		Admin: true,
	})
}
