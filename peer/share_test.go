package peer

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchboard-rpc/switchboard/internal/testkit"
	"github.com/switchboard-rpc/switchboard/internal/turns"
)

// busyShare returns a Share of one turn under which every connection
// counts as busy after busyAfter reads (no read is long enough to have
// waited), so that turns are taken whatever the machine's speed.
func busyShare() *turns.Share {
	s := turns.New(1)
	s.Waited = time.Hour
	return s
}

// pipeline sends n echo calls to p from a goroutine of its own and
// reads their n replies, failing the test unless every one arrives
// within the deadline.
func pipeline(t *testing.T, p *rawPeer, n int, deadline time.Duration) {
	t.Helper()
	var sent sync.WaitGroup
	defer sent.Wait()
	sent.Go(func() {
		for i := range n {
			msg := fmt.Sprintf(`{"jsonrpc":"2.0","method":"echo","params":[%d],"id":%d}`, i, i)
			if err := p.raw.Write(context.Background(), []byte(msg)); err != nil {
				t.Errorf("write: %v", err)
				return
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	for i := range n {
		b, err := p.raw.Read(ctx)
		if err != nil {
			t.Fatalf("reply %d of %d: %v", i+1, n, err)
		}
		if !strings.Contains(string(b), `"result"`) {
			t.Fatalf("reply %d: %s", i+1, b)
		}
	}
}

// Busy connections take turns: with one turn for two of them, both
// pipelining, every call of each is answered, and the turn is free once
// they are done.
func TestShareBusyConnectionsTakeTurns(t *testing.T) {
	s := busyShare()
	a := newRawPeer(t, &Options{Router: specMux(), Share: s})
	b := newRawPeer(t, &Options{Router: specMux(), Share: s})
	var wg sync.WaitGroup
	for _, p := range []*rawPeer{a, b} {
		wg.Go(func() { pipeline(t, p, 500, testkit.Wait) })
	}
	wg.Wait()
	a.c.Close()
	b.c.Close()
	<-a.c.Done()
	<-b.c.Done()
	if n := s.Held(); n != 0 {
		t.Fatalf("%d turns held after both connections closed", n)
	}
}

// A busy connection whose handler blocks does not keep its turn: the
// reading moves off the handler (watchdog) and the new reader gives the
// turn back, so the other busy connection is served meanwhile.
func TestShareBlockedHandlerGivesTurnBack(t *testing.T) {
	s := busyShare()
	release := make(chan struct{})
	started := make(chan struct{})
	m := specMux()
	m.HandleFunc("block", func(ctx context.Context, _ *Request) (any, error) {
		close(started)
		<-release
		return "done", nil
	})
	a := newRawPeer(t, &Options{Router: m, Share: s})
	b := newRawPeer(t, &Options{Router: specMux(), Share: s})
	for i := range busyAfter + 1 { // a is busy from now on
		a.write(fmt.Sprintf(`{"jsonrpc":"2.0","method":"echo","id":%d}`, i))
		a.read()
	}
	a.write(`{"jsonrpc":"2.0","method":"block","id":"b"}`)
	<-started
	pipeline(t, b, 200, testkit.Wait)
	close(release)
	if got := a.read(); !strings.Contains(got, `"done"`) {
		t.Fatalf("block: %s", got)
	}
}

// A busy connection waiting for room for its replies (its other side
// does not read) gives its turn back for the wait.
func TestShareFullQueueGivesTurnBack(t *testing.T) {
	s := busyShare()
	a := newRawPeer(t, &Options{Router: specMux(), Share: s, MaxQueue: 4})
	b := newRawPeer(t, &Options{Router: specMux(), Share: s})
	var writer sync.WaitGroup
	defer writer.Wait()
	defer a.c.Close()
	writer.Go(func() { // pings whose answers a's other side never reads
		for {
			if err := a.raw.Write(context.Background(), []byte(`{"jsonrpc":"2.0","method":"rpc.ping","id":1}`)); err != nil {
				return // closed
			}
		}
	})
	testkit.WaitFor(t, "a's reader to wait for room", func() bool { return a.c.paused.Load() })
	pipeline(t, b, 200, testkit.Wait)
}

// A connection that is not busy never waits for a turn: with the only
// turn held, its calls are answered.
func TestShareLeavesOthersAlone(t *testing.T) {
	s := turns.New(1)
	s.Waited = 0 // every read waited for the network
	s.Take(nil)
	defer s.Give()
	p := newRawPeer(t, &Options{Router: specMux(), Share: s})
	for i := range 4 * busyAfter {
		got := p.roundTrip(fmt.Sprintf(`{"jsonrpc":"2.0","method":"echo","params":[%d],"id":%d}`, i, i))
		testkit.JSONEqual(t, fmt.Sprintf(`{"jsonrpc":"2.0","result":[%d],"id":%d}`, i, i), got)
	}
}

// A busy reader waiting for a turn stops waiting when its connection
// closes.
func TestShareWaitEndsOnClose(t *testing.T) {
	s := busyShare()
	s.Take(nil) // held elsewhere for the whole test
	defer s.Give()
	p := newRawPeer(t, &Options{Router: specMux(), Share: s})
	for i := range busyAfter + 1 {
		p.write(fmt.Sprintf(`{"jsonrpc":"2.0","method":"echo","id":%d}`, i))
	}
	for range busyAfter {
		p.read()
	}
	testkit.WaitFor(t, "the reader to read the message it has no turn for", func() bool {
		return p.ct.reads.Load() == busyAfter+1
	})
	p.c.Close()
	select {
	case <-p.c.Done():
	case <-time.After(testkit.Wait):
		t.Fatal("the connection did not close while its reader waited for a turn")
	}
}
