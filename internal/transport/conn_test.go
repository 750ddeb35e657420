package transport

import (
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
)

// writeLog is a net.Conn that records each Write it is given.
type writeLog struct {
	net.Conn
	mu     sync.Mutex
	writes []string
	err    error
}

func (w *writeLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes = append(w.writes, string(p))
	return len(p), w.err
}

func (w *writeLog) got() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.writes...)
}

func TestConn(t *testing.T) {
	w := &writeLog{}
	gc := New(w)
	for _, s := range []string{"a", "b"} {
		if _, err := gc.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	if got := w.got(); len(got) != 2 {
		t.Fatalf("writes not held went out as %q", got)
	}

	gc.Hold()
	for _, s := range []string{"c", "d", "e"} {
		if n, err := gc.Write([]byte(s)); n != 1 || err != nil {
			t.Fatalf("held Write = %d, %v", n, err)
		}
	}
	if got := w.got(); len(got) != 2 {
		t.Fatalf("held writes went out: %q", got)
	}
	if err := gc.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := w.got(); len(got) != 3 || got[2] != "cde" {
		t.Fatalf("held writes went out as %q, want one cde", got[2:])
	}

	// Past gatherLimit, what is held goes out early, in one write.
	gc.Hold()
	big := strings.Repeat("x", gatherLimit/2+1)
	for range 2 {
		if _, err := gc.Write([]byte(big)); err != nil {
			t.Fatal(err)
		}
	}
	if got := w.got(); len(got) != 4 || len(got[3]) != 2*len(big) {
		t.Fatalf("%d writes after 2 large held ones", len(got))
	}
	if err := gc.Flush(); err != nil || len(w.got()) != 4 {
		t.Fatalf("Flush with nothing held: %v, %d writes", err, len(w.got()))
	}

	// The connection's error comes from Flush.
	w.err = errors.New("broken")
	gc.Hold()
	if _, err := gc.Write([]byte("f")); err != nil {
		t.Fatalf("held Write failed: %v", err)
	}
	if err := gc.Flush(); err != w.err { //nolint:errorlint // the error itself
		t.Fatalf("Flush = %v, want %v", err, w.err)
	}
}
