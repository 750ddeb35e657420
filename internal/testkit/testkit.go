// Package testkit holds the helpers that the module's tests share:
// waiting, with a deadline, for a condition or a value, and comparing
// JSON texts; and the small chores of many tests: signing a JSON Web
// Token ([HS256]), writing a key or config file ([WriteFile]), a log
// written while the test reads it ([Buffer]), a request over HTTP POST
// ([Post]).
//
//	testkit.WaitFor(t, "no call in flight", func() bool { return h.Stats().Routes.InFlight == 0 })
//	testkit.WaitCount(t, "10 000 events", 10_000, rec.count)
//	e := testkit.Recv(t, events, "the event")
//	testkit.JSONEqual(t, `{"jsonrpc":"2.0","result":3,"id":1}`, reply)
//
// Every wait ends at [Wait] ([Slow] for RecvSlow, in the end-to-end
// tests of the integration module; Wait without a step for WaitCount)
// and fails the test there: waits watch for what they expect, they do
// not sleep and hope. It is test support only: nothing outside _test.go
// files imports it.
package testkit

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
	"time"
)

// Wait is how long a helper waits before it fails the test: long, since
// a loaded machine is slow (two cores running the race detector and
// other builds have taken 6.5 s to answer one publish to 1000 sockets),
// and only a failing test waits it out.
const Wait = 30 * time.Second

// wait is Wait, but for this package's own tests of the failures.
var wait = Wait

// poll is how often WaitFor checks its condition.
const poll = 5 * time.Millisecond

// WaitFor waits until cond holds, checking it every few milliseconds,
// and fails the test after [Wait], naming what it waited for.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(poll)
	defer tick.Stop()
	WaitForEvent(t, what, func() <-chan time.Time { return tick.C }, cond)
}

// WaitForEvent is [WaitFor] for a condition that changes only when an
// event happens: it checks cond again each time the channel next returns
// delivers or is closed. next is called before each check, so that an
// event between the check and the wait is not missed.
func WaitForEvent[E any](t testing.TB, what string, next func() <-chan E, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		event := next()
		if cond() {
			return
		}
		select {
		case <-event:
		case <-deadline.C:
			t.Fatalf("waited %v for %s", wait, what)
		}
	}
}

// WaitCount waits until count reaches n, for work done in many steps,
// such as thousands of events published and received: it fails the test
// once [Wait] passes with no step made, however long the whole takes.
func WaitCount(t testing.TB, what string, n int, count func() int) {
	t.Helper()
	tick := time.NewTicker(poll)
	defer tick.Stop()
	last, moved := count(), time.Now()
	for last < n {
		<-tick.C
		if c := count(); c != last {
			last, moved = c, time.Now()
		} else if time.Since(moved) > wait {
			t.Fatalf("waited %v for %s, at %d of %d", wait, what, last, n)
		}
	}
}

// Recv returns the next value from ch, and fails the test after [Wait]
// without one, naming what it waited for.
func Recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	return recv(t, wait, ch, what)
}

// Slow is how long [RecvSlow] waits: for the end-to-end tests, whose hubs,
// NATS servers and browsers are processes of their own, on machines that
// may be loaded.
const Slow = 60 * time.Second

// RecvSlow is [Recv] with the deadline [Slow].
func RecvSlow[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	return recv(t, Slow, ch, what)
}

func recv[T any](t testing.TB, d time.Duration, ch <-chan T, what string) T {
	t.Helper()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	select {
	case v := <-ch:
		return v
	case <-deadline.C:
		t.Fatalf("waited %v for %s", d, what)
		panic("unreachable")
	}
}

// JSONEqual fails the test unless the JSON texts want and got hold the
// same value: objects whatever the order of their members, numbers as
// written (1 and 1.0 differ, as an id echoed must be the same), and a
// top-level array as a set of elements, since the replies of a batch come
// in any order. want "" means no reply at all: got must be "" too.
func JSONEqual(t testing.TB, want, got string) {
	t.Helper()
	if want == "" || got == "" {
		if want != got {
			t.Fatalf("got  %q\nwant %q", got, want)
		}
		return
	}
	wa, w := canonical(t, "want", want)
	ga, g := canonical(t, "got", got)
	if wa != ga || !slices.Equal(w, g) {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// canonical returns the JSON text s re-encoded, members sorted by name,
// or when it is an array, each element's, sorted.
func canonical(t testing.TB, name, s string) (array bool, texts []string) {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader([]byte(s)))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil || d.More() {
		t.Fatalf("%s is not one JSON value: %s", name, s)
	}
	elems, ok := v.([]any)
	if !ok {
		elems = []any{v}
	}
	out := make([]string, len(elems))
	for i, e := range elems {
		b, _ := json.Marshal(e)
		out[i] = string(b)
	}
	if ok {
		slices.Sort(out)
	}
	return ok, out
}
