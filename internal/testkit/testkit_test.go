package testkit

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// recorder is a testing.TB whose Fatalf ends the helper under test, as
// the real one does, and records the failure.
type recorder struct {
	testing.TB
	failed string
}

type fatal struct{}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
	panic(fatal{})
}

// fails runs f with a recorder and returns what it failed with, "" if
// it did not.
func fails(t *testing.T, f func(tb testing.TB)) (msg string) {
	t.Helper()
	r := &recorder{TB: t}
	defer func() {
		if v := recover(); v != nil && v != (fatal{}) {
			panic(v)
		}
		msg = r.failed
	}()
	f(r)
	return ""
}

func TestJSONEqual(t *testing.T) {
	tests := []struct {
		name, want, got string
		equal           bool
	}{
		{"members in any order", `{"a":1,"b":[1,2]}`, `{"b":[1,2],"a":1}`, true},
		{"batch replies in any order", `[{"id":1},{"id":2}]`, `[{"id":2},{"id":1}]`, true},
		{"no reply", ``, ``, true},
		{"inner arrays keep their order", `{"a":[1,2]}`, `{"a":[2,1]}`, false},
		{"numbers as written", `{"id":1}`, `{"id":1.0}`, false},
		{"a value and an array of it", `1`, `[1]`, false},
		{"a batch element twice", `[1,2]`, `[1,1]`, false},
		{"a reply where none is due", ``, `{}`, false},
		{"invalid JSON", `{}`, `{`, false},
		{"two values", `{}`, `{} {}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := fails(t, func(tb testing.TB) { JSONEqual(tb, tt.want, tt.got) })
			if (msg == "") != tt.equal {
				t.Fatalf("JSONEqual(%#q, %#q) failed with %q, want equal %v", tt.want, tt.got, msg, tt.equal)
			}
		})
	}
}

func TestWaitFor(t *testing.T) {
	var n atomic.Int32
	var wg sync.WaitGroup
	wg.Go(func() {
		for range 3 {
			n.Add(1)
		}
	})
	WaitFor(t, "three", func() bool { return n.Load() == 3 })
	wg.Wait()

	defer func(w time.Duration) { wait = w }(wait)
	wait = 20 * time.Millisecond
	if msg := fails(t, func(tb testing.TB) { WaitFor(tb, "never", func() bool { return false }) }); msg != "waited 20ms for never" {
		t.Fatalf("failed with %q", msg)
	}
}

func TestWaitCount(t *testing.T) {
	defer func(w time.Duration) { wait = w }(wait)
	wait = 20 * time.Millisecond
	// A step at every check: the count takes many times wait to reach,
	// but never stops for wait.
	n := 0
	WaitCount(t, "a hundred steps", 100, func() int { n++; return n })
	if msg := fails(t, func(tb testing.TB) { WaitCount(tb, "five", 5, func() int { return 3 }) }); msg != "waited 20ms for five, at 3 of 5" {
		t.Fatalf("failed with %q", msg)
	}
}

func TestWaitForEvent(t *testing.T) {
	events := make(chan struct{}, 3)
	var n atomic.Int32
	var wg sync.WaitGroup
	wg.Go(func() {
		for range 3 {
			n.Add(1)
			events <- struct{}{}
		}
	})
	WaitForEvent(t, "three", func() <-chan struct{} { return events }, func() bool { return n.Load() == 3 })
	wg.Wait()
}

func TestRecv(t *testing.T) {
	ch := make(chan int, 1)
	ch <- 7
	if v := Recv(t, ch, "seven"); v != 7 {
		t.Fatalf("Recv returned %d", v)
	}

	defer func(w time.Duration) { wait = w }(wait)
	wait = 20 * time.Millisecond
	if msg := fails(t, func(tb testing.TB) { Recv(tb, ch, "an int") }); msg != "waited 20ms for an int" {
		t.Fatalf("failed with %q", msg)
	}
}
