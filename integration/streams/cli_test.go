package streams_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/integration/internal/hubproc"
	"github.com/switchboard-rpc/switchboard/integration/internal/netcut"
	"github.com/switchboard-rpc/switchboard/integration/internal/testclient"
)

// lines sends each line r gives to the returned channel, until r ends;
// wg ends with it.
func lines(r io.Reader, wg *sync.WaitGroup) <-chan string {
	ch := make(chan string, 10000)
	wg.Go(func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			ch <- sc.Text()
		}
	})
	return ch
}

// line returns the next line, failing the test after 60 s without one.
func line(t *testing.T, ch <-chan string, what string) string {
	t.Helper()
	select {
	case l, ok := <-ch:
		if !ok {
			t.Fatalf("%s: the command ended", what)
		}
		return l
	case <-time.After(60 * time.Second):
		t.Fatalf("%s: no line within 60s", what)
		return ""
	}
}

// said reads rpc's stderr until it has said each of want, in any order,
// and nothing else beyond what it says of a lost connection.
func said(t *testing.T, errs <-chan string, want ...string) {
	t.Helper()
	left := map[string]bool{}
	for _, w := range want {
		left[w] = true
	}
	for len(left) > 0 {
		l := line(t, errs, "rpc subscribe's stderr")
		switch {
		case left[l]:
			delete(left, l)
		case strings.HasPrefix(l, "rpc: connection lost: "), strings.HasPrefix(l, "rpc: reconnection failed: "):
		default:
			t.Fatalf("rpc subscribe said %q; waiting for %v", l, left)
		}
	}
}

// rpc subscribe, its connection cut, resumes by itself: after a short
// drop it prints every event once and in order, with nothing said; after
// a drop longer than the history (-history 100) it says on stderr that
// events were missed, then prints what the hub held and the live ones.
func TestCLISubscribeResumes(t *testing.T) {
	h := hubproc.StartDemo(t, "-history", "100")
	p := netcut.Start(t, h.Addr())
	bin, err := hubproc.Command("rpc")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.Command(bin, "subscribe", testclient.URL(p.Addr()), "cli.t")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	out, errs := lines(stdout, &wg), lines(stderr, &wg)
	defer func() {
		_ = cmd.Process.Kill()
		wg.Wait()
		_ = cmd.Wait()
	}()
	if l := line(t, errs, "rpc subscribe"); !strings.HasPrefix(l, "rpc: subscribed to cli.t at ") {
		t.Fatalf("rpc subscribe said %q", l)
	}
	pub, _ := testclient.Dial(t, h.WebSocketURL(), nil)
	topic := fixed("cli.t")
	var last uint64
	expect := func(from, to int) {
		t.Helper()
		for want := from; want <= to; want++ {
			l := line(t, out, "rpc subscribe's events")
			var ev struct {
				Topic string
				Data  int
				Seq   uint64
				Epoch string
			}
			if err := json.Unmarshal([]byte(l), &ev); err != nil || ev.Topic != "cli.t" || ev.Data != want || ev.Seq <= last || ev.Epoch == "" {
				t.Fatalf("rpc subscribe printed %s after seq %d; want event %d", l, last, want)
			}
			last = ev.Seq
		}
	}
	if err := publish(ctx, pub, 1, 50, topic); err != nil {
		t.Fatal(err)
	}
	expect(1, 50)

	// A short drop: every event comes back.
	p.Block()
	if err := publish(ctx, pub, 51, 100, topic); err != nil {
		t.Fatal(err)
	}
	p.Unblock()
	said(t, errs, "rpc: reconnected")
	if err := publish(ctx, pub, 101, 120, topic); err != nil {
		t.Fatal(err)
	}
	expect(51, 120)

	// A long one: 300 events while away, the hub holds 100 of them.
	p.Block()
	if err := publish(ctx, pub, 121, 420, topic); err != nil {
		t.Fatal(err)
	}
	p.Unblock()
	said(t, errs, "rpc: reconnected", "rpc: events of cli.t were missed: the hub no longer held them")
	if err := publish(ctx, pub, 421, 430, topic); err != nil {
		t.Fatal(err)
	}
	expect(321, 430)
	select {
	case l := <-errs:
		t.Errorf("rpc subscribe said more: %q", l)
	default:
	}
}
